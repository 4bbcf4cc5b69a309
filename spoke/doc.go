// Package spoke is the agent that runs in each workload cluster: it reads its
// cluster's config partition, reconciles the local Argo CD and publishes
// status back.
//
// It may import projector (read side), events and schemas, and never hub.
// Neither it nor anything the spoke binary (cmd/argosy-spoke) links may
// import github.com/argoproj/argo-cd/v2; TestSpokeBinaryDoesNotLinkArgoCD and
// depguard hold that line.
//
// What is here so far: the spoke's keys (GenerateKeys, WriteKeys, LoadKeys)
// and the argosy-spoke binary with keygen. Consuming and applying arrive
// with the rest of the spoke issue.
package spoke
