"""Reads a folder of TensorBoard event files with TensorBoard's own reader.

Usage: read_tensorboard.py LOGDIR
Prints one line per scalar point, "TAG STEP VALUE", sorted by tag and step,
as EventAccumulator (tensorboard.backend.event_processing) loads them; exits
1 when the folder holds no event file or a record fails its checksum.
Run with the environment scripts/get-tensorboard.sh makes.
"""

import sys

from tensorboard.backend.event_processing import event_accumulator


def main(logdir):
    acc = event_accumulator.EventAccumulator(
        logdir, size_guidance={event_accumulator.SCALARS: 0}
    )
    acc.Reload()
    tags = acc.Tags()["scalars"]
    if not tags:
        print(f"{logdir}: no scalars", file=sys.stderr)
        return 1
    for tag in sorted(tags):
        for event in acc.Scalars(tag):
            print(f"{tag} {event.step} {event.value!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
