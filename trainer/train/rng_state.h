// Torch's default CPU random generator state as text, for checkpoints
// (TrainerState::rng_state_hex, checkpoint.h): a resumed run continues the
// random stream where the interrupted one stopped.
//
// Thread safety: both calls lock the global generator.
#ifndef SKRULL_TRAINER_TRAIN_RNG_STATE_H_
#define SKRULL_TRAINER_TRAIN_RNG_STATE_H_

#include <string>

#include "common/status.h"

namespace skrull::train {

// The default CPU generator's state, two lowercase hex digits per byte.
std::string CpuRngStateHex();

// Sets the default CPU generator to `hex` (from CpuRngStateHex); "" leaves
// it alone. InvalidArgument, starting with "<origin>: rng_state_hex: ", when
// the text has an odd length or is not a CPU generator state.
Status RestoreCpuRngState(const std::string& hex, const std::string& origin);

}  // namespace skrull::train

#endif  // SKRULL_TRAINER_TRAIN_RNG_STATE_H_
