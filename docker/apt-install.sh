#!/bin/sh
# apt-get install for the Debian 13 CUDA images (docker/trainer.Dockerfile):
# enables contrib / non-free (where Debian keeps PyTorch's CUDA build, NCCL
# and the CUDA toolkit) and installs PACKAGES.
#
#   docker/apt-install.sh CUDNN_DIR PACKAGE...
#
# cuDNN: Debian's nvidia-cudnn package downloads cuDNN from NVIDIA in its
# post-install step. With internet that step installs it and CUDNN_DIR is
# unused. Without internet the step fails; then, if CUDNN_DIR holds
# libcudnn*.so.9, those are installed into /usr/local/lib/skrull-cudnn and the
# step is made a no-op, else the build fails naming both ways
# (docker/README.md, "cuDNN"). Any other failure fails the build.
set -eu
cudnn_dir="$1"
shift
export DEBIAN_FRONTEND=noninteractive
sed -i 's/^Components: main$/Components: main contrib non-free non-free-firmware/' \
  /etc/apt/sources.list.d/debian.sources
apt-get update -q
if apt-get install -y -q --no-install-recommends "$@"; then
  exit 0
fi
unconfigured="$(dpkg --audit | awk '/^ [a-z0-9]/ { print $1 }' | sort -u | tr '\n' ' ')"
case " $unconfigured " in
  *" nvidia-cudnn "*) ;;
  *) echo "apt-install.sh: apt-get install failed (not cuDNN's download)" >&2; exit 1 ;;
esac
if ! ls "$cudnn_dir"/libcudnn*.so.9 >/dev/null 2>&1; then
  echo "apt-install.sh: nvidia-cudnn could not download cuDNN from NVIDIA and no libcudnn*.so.9" \
    "was given: build where NVIDIA's site or PyPI is reachable, or pass --build-arg CUDNN_IMAGE=<image with /cudnn/libcudnn*.so.9>" \
    "(docker/README.md, \"cuDNN\")" >&2
  exit 1
fi
echo "apt-install.sh: no internet for nvidia-cudnn: using $(ls "$cudnn_dir"/libcudnn*.so.9 | wc -l) libraries from $cudnn_dir"
mkdir -p /usr/local/lib/skrull-cudnn
cp -L "$cudnn_dir"/libcudnn*.so.9 /usr/local/lib/skrull-cudnn/
echo /usr/local/lib/skrull-cudnn >/etc/ld.so.conf.d/skrull-cudnn.conf
ldconfig
echo 'exit 0  # cuDNN was copied in by docker/apt-install.sh' >/var/lib/dpkg/info/nvidia-cudnn.postinst
dpkg --configure -a
