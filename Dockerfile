# syntax=docker/dockerfile:1
# Argosy's images, two targets:
#   docker build --target argosy       -t argosy:TAG .        # argosy and argosy-hub (hub, projector, CLI)
#   docker build --target argosy-spoke -t argosy-spoke:TAG .  # the thin spoke, which never links Argo CD
# Both are static binaries on an empty base, run as UID 65532, and need no
# writable root filesystem (the chart mounts it read-only). deploy/image_test.go
# builds the binaries with this file's own go build line and checks that.

ARG GO_VERSION=1.26.8

FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG COMMIT=unknown
ENV CGO_ENABLED=0
RUN go build -trimpath -ldflags "-s -w -X github.com/argosyproj/argosy/internal/version.Version=${VERSION} -X github.com/argosyproj/argosy/internal/version.Commit=${COMMIT}" -o /out/ ./cmd/argosy ./cmd/argosy-hub ./cmd/argosy-spoke
# The only files the binaries need from a distribution: CA certificates (the
# hub's OIDC issuer, Kafka's TLS when it uses public CAs) and a passwd entry
# for the non-root user.
RUN echo 'nonroot:x:65532:65532:nonroot:/nonexistent:/sbin/nologin' > /out/passwd

FROM scratch AS base
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/passwd /etc/passwd
ENV PATH=/usr/local/bin
USER 65532:65532

FROM base AS argosy-spoke
COPY --from=build /out/argosy-spoke /usr/local/bin/argosy-spoke
CMD ["argosy-spoke", "run"]

FROM base AS argosy
COPY --from=build /out/argosy /out/argosy-hub /usr/local/bin/
CMD ["argosy-hub", "run"]
