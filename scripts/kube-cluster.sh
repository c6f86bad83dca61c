#!/usr/bin/env bash
# A real Kubernetes control plane on 127.0.0.1, with kwok's fake GPU nodes.
#
#   scripts/kube-cluster.sh build            # build the pinned binaries once (cached)
#   scripts/kube-cluster.sh up [--nodes N]   # build if needed, start; last line: admin kubeconfig
#   scripts/kube-cluster.sh status           # what runs, what the API server says
#   scripts/kube-cluster.sh down             # stop everything `up` started, remove its state
#   scripts/kube-cluster.sh test             # up (if down), run the CTest label `kube`
#   scripts/kube-cluster.sh env              # print KUBECONFIG=... and the tool paths (for eval)
#   scripts/kube-cluster.sh restart-apiserver  # stop and start kube-apiserver (the e2e suite's outage)
#
# Everything builds from Go modules through the Go module proxy into
# $SKRULL_KUBE_HOME (default /var/cache/skrull/kube, outside the tree):
#   etcd                       go.etcd.io/etcd/server/v3           $ETCD_VERSION
#   kube-apiserver, kube-controller-manager, kube-scheduler, kubectl
#                              k8s.io/kubernetes                   $KUBE_VERSION
#     (a wrapper module whose go.mod replaces every k8s.io staging module, listed
#      at v0.0.0 in Kubernetes' go.mod, by its published v0.N.x)
#   kwok                       sigs.k8s.io/kwok/cmd/kwok           $KWOK_VERSION
#   helm                       helm.sh/helm/v3/cmd/helm            $HELM_VERSION
#     (both on Kubernetes' libraries at $KUBE_VERSION's patch: they reuse its build)
#   kueue                      sigs.k8s.io/kueue/cmd/kueue         $KUEUE_VERSION
#     (only with `build kueue`; nothing starts it yet)
#
# The cluster (state under $SKRULL_KUBE_RUN, default $SKRULL_KUBE_HOME/run):
#   etcd on 127.0.0.1, ports base+1 (client) and base+2 (peer), plain HTTP, loopback only;
#   kube-apiserver on https://127.0.0.1:<base>: client-certificate and
#     ServiceAccount-token authentication, the Node and RBAC authorizers, the default
#     admission plugins, ServiceAccount token issuing (TokenRequest);
#   kube-controller-manager: garbage collector, Deployments/ReplicaSets, ServiceAccounts
#     and their tokens, namespaces, node lifecycle, endpoints, ... (all default controllers);
#   kube-scheduler;
#   kwok managing N fake nodes (default 4) named kwok-gpu-<i>: `nvidia.com/gpu: 8`
#     and `rdma/ib: 8` allocatable, label nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3; pods bound to
#     them go Running, and finish as docs/deploy.md describes (the kwok stages below).
#
# Environment: SKRULL_KUBE_HOME, SKRULL_KUBE_RUN, SKRULL_KUBE_PORT_BASE (default 46440:
# API server = base, etcd = base+1 and base+2), SKRULL_KUBE_NODES (default 4),
# SKRULL_KUBE_BUILD_JOBS (go build -p, default 2), SKRULL_KUBE_NICE (default 10).
set -euo pipefail

readonly KUBE_VERSION="v1.36.3"
readonly ETCD_VERSION="v3.6.8"   # the etcd Kubernetes $KUBE_VERSION pins in its go.mod
readonly KWOK_VERSION="v0.8.0"
readonly HELM_VERSION="v3.21.4"  # the newest helm 3 built on Kubernetes 1.36's libraries
readonly KUEUE_VERSION="v0.17.0"
readonly GPU_PRODUCT="NVIDIA-H100-80GB-HBM3"

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
home="${SKRULL_KUBE_HOME:-/var/cache/skrull/kube}"
run="${SKRULL_KUBE_RUN:-$home/run}"
bin="$home/bin"
port_base="${SKRULL_KUBE_PORT_BASE:-46440}"
apiserver_port="$port_base"
etcd_port="$((port_base + 1))"
etcd_peer_port="$((port_base + 2))"
nodes="${SKRULL_KUBE_NODES:-4}"
build_jobs="${SKRULL_KUBE_BUILD_JOBS:-2}"
nice_level="${SKRULL_KUBE_NICE:-10}"

export GOPATH="$home/gopath"
export GOMODCACHE="$home/gopath/pkg/mod"
export GOCACHE="$home/gocache"
export GOFLAGS="-mod=mod -p=$build_jobs -buildvcs=false"
export GOTOOLCHAIN=local
export CGO_ENABLED=0

log() { printf '\033[1m[kube-cluster]\033[0m %s\n' "$*" >&2; }
die() { printf 'kube-cluster.sh: %s\n' "$*" >&2; exit 1; }

# ---------------------------------------------------------------------------
# build

# The binaries `up` needs, each a file named after its pinned version.
tool() { # tool NAME -> path
  case "$1" in
    etcd) echo "$bin/etcd-$ETCD_VERSION" ;;
    kube-apiserver | kube-controller-manager | kube-scheduler | kubectl) echo "$bin/$1-$KUBE_VERSION" ;;
    kwok) echo "$bin/kwok-$KWOK_VERSION" ;;
    helm) echo "$bin/helm-$HELM_VERSION" ;;
    kueue) echo "$bin/kueue-$KUEUE_VERSION" ;;
    *) die "unknown tool $1" ;;
  esac
}

gobuild() { nice -n "$nice_level" go build -trimpath "$@"; }

build_etcd() {
  [ -x "$(tool etcd)" ] && return 0
  log "building etcd $ETCD_VERSION"
  local src="$home/src/etcd-$ETCD_VERSION"
  mkdir -p "$src"
  cat >"$src/go.mod" <<EOF
module skrull.local/etcd

go 1.26

require go.etcd.io/etcd/server/v3 $ETCD_VERSION
EOF
  (cd "$src" && gobuild -o "$(tool etcd).tmp" go.etcd.io/etcd/server/v3) && mv "$(tool etcd).tmp" "$(tool etcd)"
}

build_kubernetes() {
  local want=(kube-apiserver kube-controller-manager kube-scheduler kubectl) missing=() t
  for t in "${want[@]}"; do [ -x "$(tool "$t")" ] || missing+=("$t"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "building ${missing[*]} $KUBE_VERSION (the first build takes long on 2 cores; see docs/deploy.md)"
  local src="$home/src/kubernetes-$KUBE_VERSION" minor="${KUBE_VERSION#v1.}"
  minor="${minor%%.*}"
  mkdir -p "$src"
  # Kubernetes' go.mod requires its staging modules at v0.0.0 and replaces them by
  # ./staging/src/...; replaces of a dependency do not apply, so name the published ones.
  local kmod
  kmod="$(cd "$src" && go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')"
  [ -f "$kmod" ] || die "could not download k8s.io/kubernetes@$KUBE_VERSION's go.mod"
  {
    printf 'module skrull.local/kubernetes\n\ngo 1.26\n\nrequire k8s.io/kubernetes %s\n\nreplace (\n' "$KUBE_VERSION"
    sed -n 's#^\t\(k8s.io/[a-z0-9-]*\) => ./staging/src/.*#\t\1 => \1 v0.'"${KUBE_VERSION#v1.}"'#p' "$kmod"
    printf ')\n'
  } >"$src/go.mod"
  local pkgs=() ldflags
  for t in "${missing[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$t"); done
  ldflags="-s -w"
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $p.gitVersion=$KUBE_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor"
    ldflags+=" -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
  done
  mkdir -p "$src/out"
  (cd "$src" && gobuild -ldflags "$ldflags" -o "$src/out/" "${pkgs[@]}")
  for t in "${missing[@]}"; do mv "$src/out/$t" "$(tool "$t")"; done
}

# A tool whose go.mod requires k8s.io modules of the same minor as
# $KUBE_VERSION gets them at exactly $KUBE_VERSION's patch (v0.N.x), so that it
# shares compiled packages with the Kubernetes build (half the build time).
build_module_tool() { # build_module_tool NAME PACKAGE VERSION [LDFLAGS]
  local name="$1" pkg="$2" version="$3" ldflags="${4:-}"
  [ -x "$(tool "$name")" ] && return 0
  log "building $name $version"
  local src="$home/src/$name-$version" module="${pkg%/cmd/*}" kmod staging="v0.${KUBE_VERSION#v1.}"
  mkdir -p "$src"
  kmod="$(cd "$src" && go mod download -json "$module@$version" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')"
  {
    printf 'module skrull.local/%s\n\ngo 1.26\n\nrequire %s %s\n' "$name" "$module" "$version"
    sed -n 's#^\t\(k8s.io/[a-z0-9-]*\) '"${staging%.*}"'\.[0-9]*\( // indirect\)\{0,1\}$#require \1 '"$staging"'#p' "$kmod"
  } >"$src/go.mod"
  (cd "$src" && gobuild -ldflags "-s -w $ldflags" -o "$(tool "$name").tmp" "$pkg") &&
    mv "$(tool "$name").tmp" "$(tool "$name")"
}

build_kwok() {
  build_module_tool kwok sigs.k8s.io/kwok/cmd/kwok "$KWOK_VERSION" \
    "-X sigs.k8s.io/kwok/pkg/consts.Version=${KWOK_VERSION#v}"
}
build_helm() {
  build_module_tool helm helm.sh/helm/v3/cmd/helm "$HELM_VERSION" \
    "-X helm.sh/helm/v3/internal/version.version=$HELM_VERSION -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
}
build_kueue() {
  build_module_tool kueue sigs.k8s.io/kueue/cmd/kueue "$KUEUE_VERSION" \
    "-X sigs.k8s.io/kueue/pkg/version.GitVersion=$KUEUE_VERSION"
}

# The binaries each build target makes.
built() {
  case "$1" in
    kubernetes) [ -x "$(tool kube-apiserver)" ] && [ -x "$(tool kube-controller-manager)" ] &&
      [ -x "$(tool kube-scheduler)" ] && [ -x "$(tool kubectl)" ] ;;
    *) [ -x "$(tool "$1")" ] ;;
  esac
}

cmd_build() { # cmd_build [kubernetes|etcd|kwok|helm|kueue]... (default: the first four)
  local start=$SECONDS what=("$@") w missing=()
  [ ${#what[@]} -eq 0 ] && what=(kubernetes etcd kwok helm)
  for w in "${what[@]}"; do built "$w" || missing+=("$w"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  command -v go >/dev/null || die "go not found: install Go >= 1.26 (Debian: golang-1.26 from backports, or the Go module proxy's toolchain)"
  mkdir -p "$bin" "$home/src"
  exec 8>"$home/.build.lock"
  flock 8
  for w in "${missing[@]}"; do "build_$w"; done
  log "build done in $((SECONDS - start)) s; binaries in $bin"
}

# ---------------------------------------------------------------------------
# up

pki="$run/pki"
kubeconfig_of() { echo "$run/$1.kubeconfig"; }

# cert NAME CN [O] [SAN]: a client (or, with SAN, serving) certificate signed by the cluster CA.
cert() {
  local name="$1" cn="$2" org="${3:-}" san="${4:-}" subj="/CN=$2"
  [ -n "$org" ] && subj="/O=$org/CN=$cn"
  openssl req -new -newkey rsa:2048 -nodes -keyout "$pki/$name.key" -out "$pki/$name.csr" \
    -subj "$subj" 2>/dev/null
  local ext="$pki/$name.ext"
  {
    echo "basicConstraints=CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    if [ -n "$san" ]; then
      echo "extendedKeyUsage=serverAuth,clientAuth"
      echo "subjectAltName=$san"
    else
      echo "extendedKeyUsage=clientAuth"
    fi
  } >"$ext"
  openssl x509 -req -in "$pki/$name.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
    -days 365 -sha256 -extfile "$ext" -out "$pki/$name.crt" 2>/dev/null
  rm -f "$pki/$name.csr" "$ext"
}

write_kubeconfig() { # write_kubeconfig NAME CERT
  cat >"$(kubeconfig_of "$1")" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: skrull-kube
  cluster:
    server: https://127.0.0.1:$apiserver_port
    certificate-authority: $pki/ca.crt
users:
- name: $1
  user:
    client-certificate: $pki/$2.crt
    client-key: $pki/$2.key
contexts:
- name: $1@skrull-kube
  context: {cluster: skrull-kube, user: $1, namespace: default}
current-context: $1@skrull-kube
EOF
}

make_pki() {
  [ -f "$pki/ca.crt" ] && return 0
  mkdir -p "$pki"
  openssl req -x509 -new -newkey rsa:2048 -nodes -keyout "$pki/ca.key" -out "$pki/ca.crt" \
    -days 365 -subj "/CN=skrull-kube-ca" 2>/dev/null
  cert apiserver kube-apiserver "" \
    "IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
  cert admin skrull-admin system:masters
  cert controller-manager system:kube-controller-manager
  cert scheduler system:kube-scheduler
  cert kwok kwok-controller system:masters
  openssl genrsa -out "$pki/sa.key" 2048 2>/dev/null
  openssl rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null
  write_kubeconfig admin admin
  write_kubeconfig controller-manager controller-manager
  write_kubeconfig scheduler scheduler
  write_kubeconfig kwok kwok
}

# start NAME COMMAND...: runs it in its own session (process group), logging to $run/NAME.log.
start() {
  local name="$1"
  shift
  setsid "$@" >"$run/$name.log" 2>&1 </dev/null &
  echo $! >"$run/$name.pid"
}

running() { # running NAME: its process is alive
  [ -f "$run/$1.pid" ] && kill -0 "$(cat "$run/$1.pid")" 2>/dev/null
}

wait_for() { # wait_for WHAT SECONDS COMMAND...
  local what="$1" seconds="$2" i
  shift 2
  for ((i = 0; i < seconds * 5; i++)); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  die "$what not ready after $seconds s; logs in $run/*.log"
}

kubectl_admin() { "$(tool kubectl)" --kubeconfig "$(kubeconfig_of admin)" "$@"; }

ready_kwok_nodes() { # ready_kwok_nodes N: exactly N kwok nodes are Ready
  [ "$(kubectl_admin get nodes -l type=kwok --no-headers 2>/dev/null | grep -cw Ready)" = "$1" ]
}

# kwok's own node and pod stages, from the module the kwok binary was built
# from, and ours (tests/kube/kwok-stages.yaml).
kwok_stages() {
  local kwok_dir="$GOMODCACHE/sigs.k8s.io/kwok@$KWOK_VERSION/kustomize/stage" f
  [ -d "$kwok_dir" ] || (cd "$home/src/kwok-$KWOK_VERSION" && go mod download sigs.k8s.io/kwok >/dev/null)
  for f in node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
    pod/fast/pod-ready.yaml pod/fast/pod-delete.yaml; do
    cat "$kwok_dir/$f"
    echo "---"
  done
  cat "$root/tests/kube/kwok-stages.yaml"
}

gpu_nodes() { # gpu_nodes N: the fake GPU nodes as a YAML stream
  local i
  for ((i = 0; i < $1; i++)); do
    cat <<EOF
---
apiVersion: v1
kind: Node
metadata:
  name: kwok-gpu-$i
  annotations:
    kwok.x-k8s.io/node: fake
  labels:
    type: kwok
    kubernetes.io/hostname: kwok-gpu-$i
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
    nvidia.com/gpu.product: $GPU_PRODUCT
    nvidia.com/gpu.count: "8"
status:
  allocatable: {cpu: "96", memory: 1Ti, pods: "110", nvidia.com/gpu: "8", rdma/ib: "8", ephemeral-storage: 1Ti}
  capacity: {cpu: "96", memory: 1Ti, pods: "110", nvidia.com/gpu: "8", rdma/ib: "8", ephemeral-storage: 1Ti}
  nodeInfo: {architecture: amd64, operatingSystem: linux}
EOF
  done
}

start_apiserver() {
  log "kube-apiserver on https://127.0.0.1:$apiserver_port"
  start kube-apiserver "$(tool kube-apiserver)" \
    --etcd-servers "http://127.0.0.1:$etcd_port" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$apiserver_port" \
    --cert-dir "$pki" --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
    --client-ca-file "$pki/ca.crt" \
    --authorization-mode Node,RBAC \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
    --api-audiences https://kubernetes.default.svc.cluster.local \
    --service-cluster-ip-range 10.0.0.0/24 --allow-privileged=true \
    --profiling=false --v=1
  wait_for "kube-apiserver" 180 kubectl_admin get --raw /readyz
}

stop() { # stop NAME: ends its process group, waiting up to 10 s before SIGKILL
  local pid i
  [ -f "$run/$1.pid" ] || return 0
  pid="$(cat "$run/$1.pid")"
  kill -TERM -- "-$pid" 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.2
  done
  kill -KILL -- "-$pid" 2>/dev/null || true
  rm -f "$run/$1.pid"
}

# restart-apiserver: what an API server upgrade or crash looks like to its
# clients (watches cut, then 410 Gone for old resourceVersions after a compaction).
cmd_restart_apiserver() {
  running kube-apiserver || die "not up"
  stop kube-apiserver
  start_apiserver
}

cmd_up() {
  while [ $# -gt 0 ]; do
    case "$1" in
      --nodes) nodes="$2"; shift 2 ;;
      --nodes=*) nodes="${1#*=}"; shift ;;
      *) die "up: unknown flag $1 (expected --nodes N)" ;;
    esac
  done
  cmd_build kubernetes etcd kwok >&2
  command -v openssl >/dev/null || die "openssl not found (Debian: apt-get install openssl)"
  if running kube-apiserver; then
    log "already up; \`$0 down\` first to restart"
    kubeconfig_of admin
    return 0
  fi
  local start_s=$SECONDS p
  mkdir -p "$run"
  make_pki
  log "etcd on 127.0.0.1:$etcd_port"
  start etcd "$(tool etcd)" --name skrull-kube --data-dir "$run/etcd" \
    --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
    --listen-peer-urls "http://127.0.0.1:$etcd_peer_port" \
    --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer_port" \
    --initial-cluster "skrull-kube=http://127.0.0.1:$etcd_peer_port" \
    --unsafe-no-fsync --quota-backend-bytes 4294967296 --log-level warn
  start_apiserver
  log "kube-controller-manager, kube-scheduler"
  start kube-controller-manager "$(tool kube-controller-manager)" \
    --kubeconfig "$(kubeconfig_of controller-manager)" \
    --authentication-kubeconfig "$(kubeconfig_of controller-manager)" \
    --authorization-kubeconfig "$(kubeconfig_of controller-manager)" \
    --bind-address 127.0.0.1 --secure-port 0 --leader-elect=false \
    --service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/ca.crt" \
    --use-service-account-credentials=true --controllers '*' \
    --kube-api-qps 200 --kube-api-burst 400 --v=1
  start kube-scheduler "$(tool kube-scheduler)" \
    --kubeconfig "$(kubeconfig_of scheduler)" \
    --authentication-kubeconfig "$(kubeconfig_of scheduler)" \
    --authorization-kubeconfig "$(kubeconfig_of scheduler)" \
    --bind-address 127.0.0.1 --secure-port 0 --leader-elect=false \
    --kube-api-qps 200 --kube-api-burst 400 --v=1
  kwok_stages >"$run/kwok-stages.yaml"
  log "kwok with $nodes fake GPU nodes"
  start kwok "$(tool kwok)" --kubeconfig "$(kubeconfig_of kwok)" --config "$run/kwok-stages.yaml" \
    --manage-all-nodes=false --manage-nodes-with-annotation-selector kwok.x-k8s.io/node=fake \
    --cidr 10.0.1.0/24 --node-ip 10.0.1.1 --server-address "" --node-lease-duration-seconds 40
  wait_for "the default ServiceAccount" 120 kubectl_admin get serviceaccount default -n default
  gpu_nodes "$nodes" | kubectl_admin apply -f - >/dev/null
  wait_for "$nodes Ready kwok nodes" 120 ready_kwok_nodes "$nodes"
  for p in etcd kube-apiserver kube-controller-manager kube-scheduler kwok; do
    running "$p" || die "$p exited; see $run/$p.log"
  done
  log "up in $((SECONDS - start_s)) s: $nodes kwok GPU nodes; kubectl: $(tool kubectl)"
  kubeconfig_of admin
}

# ---------------------------------------------------------------------------
# down, status, env, test

readonly COMPONENTS=(kwok kube-scheduler kube-controller-manager kube-apiserver etcd)

cmd_down() {
  local p
  # Each component leads its own process group (setsid): stop ends the group.
  for p in "${COMPONENTS[@]}"; do stop "$p"; done
  rm -rf "$run"
  log "down: nothing left running; $run removed"
}

cmd_status() {
  local p up=0
  for p in "${COMPONENTS[@]}"; do
    if running "$p"; then
      echo "$p: running (pid $(cat "$run/$p.pid"))"
      up=1
    else
      echo "$p: not running"
    fi
  done
  [ $up -eq 1 ] || return 1
  kubectl_admin get nodes -L nvidia.com/gpu.product 2>&1 || true
  echo "kubeconfig: $(kubeconfig_of admin)"
}

cmd_env() {
  echo "export KUBECONFIG=$(kubeconfig_of admin)"
  echo "export SKRULL_KUBECTL=$(tool kubectl)"
  echo "export SKRULL_HELM=$(tool helm)"
  echo "export SKRULL_KUBE_RUN=$run"
}

cmd_test() {
  local build="${SKRULL_BUILD:-$root/build}"
  cmd_build helm >&2
  cmd_up "$@" >/dev/null
  [ -x "$build/bin/skrull-controller" ] ||
    die "no $build/bin/skrull-controller: build it first (scripts/test.sh, or ninja -C build skrull-controller)"
  log "running the CTest label kube against $(kubeconfig_of admin)"
  (cd "$build" && ctest -L '^kube$' --output-on-failure --timeout 900)
}

case "${1:-}" in
  build) shift; cmd_build "$@" ;;
  up) shift; cmd_up "$@" ;;
  down) cmd_down ;;
  status) cmd_status ;;
  env) cmd_env ;;
  test) shift; cmd_test "$@" ;;
  restart-apiserver) cmd_restart_apiserver ;;
  *) die "usage: $0 build|up [--nodes N]|down|status|env|test|restart-apiserver" ;;
esac
