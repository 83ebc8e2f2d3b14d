# syntax=docker/dockerfile:1
#
# Images for the three Ebbflow binaries, built from one Dockerfile:
#
#   docker build -t ebbflow-adapter .                                   # default target
#   docker build --target ebbflow-autoscaler -t ebbflow-autoscaler .
#   docker build --target ebbflow -t ebbflow .                          # the CLI
#   docker buildx build --platform linux/amd64,linux/arm64 ...          # multi-arch
#
# Each image holds its one static binary on distroless/static, running as 65532.
# Without Docker: `make image` builds the same images (hack/image; a test checks
# that this file and hack/image agree on images, entrypoints and user).
# Needs BuildKit (the default builder in current Docker) for the cache mounts.

ARG GO_VERSION=1.26

# The builder runs on the build host's platform and cross-compiles (CGO is off), so a
# multi-arch build needs no emulation.
FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS builder
ARG TARGETOS
ARG TARGETARCH
# What --version prints (hack/image sets the same from the chart and git):
#   docker build --build-arg VERSION=v0.1.0 --build-arg REVISION=$(git rev-parse HEAD) .
ARG VERSION=unknown
ARG REVISION=unknown
# Use the toolchain of this image; never download another one mid-build because of a
# `toolchain` line in go.mod. Bump GO_VERSION instead.
ENV GOTOOLCHAIN=local CGO_ENABLED=0
WORKDIR /src

# Modules first, in a layer of their own: it is rebuilt only when go.mod/go.sum change.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod \
    go mod download

COPY . .
# Every command under cmd/ (ebbflow-adapter, ebbflow-autoscaler, ebbflow) in one
# `go build`: they share most packages, so building them together costs little more
# than one, and the final stages below each copy the one they need. The pattern (not
# the three paths) keeps a not-yet-written command from breaking the others' images.
# -trimpath and -s -w: reproducible paths, no symbol/DWARF tables (smaller image).
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -buildvcs=false -o /out/ \
      -ldflags="-s -w -X github.com/ebbflow/ebbflow/internal/buildinfo.Version=${VERSION} -X github.com/ebbflow/ebbflow/internal/buildinfo.Revision=${REVISION}" \
      ./cmd/...

# static (not base): no libc is needed for CGO_ENABLED=0 binaries. The :nonroot tag
# already runs as 65532; USER is repeated numerically so that a kubelet enforcing
# runAsNonRoot can check it without a runAsUser in the pod. Pin by digest in releases.
FROM gcr.io/distroless/static:nonroot AS runtime
USER 65532:65532

FROM runtime AS ebbflow
COPY --from=builder /out/ebbflow /ebbflow
ENTRYPOINT ["/ebbflow"]

FROM runtime AS ebbflow-autoscaler
COPY --from=builder /out/ebbflow-autoscaler /ebbflow-autoscaler
ENTRYPOINT ["/ebbflow-autoscaler"]

# Last stage = what a plain `docker build` produces.
FROM runtime AS ebbflow-adapter
COPY --from=builder /out/ebbflow-adapter /ebbflow-adapter
ENTRYPOINT ["/ebbflow-adapter"]
