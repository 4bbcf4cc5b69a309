// Package spoke is the agent that runs in each workload cluster: it reads its
// cluster's config partition, reconciles the local Argo CD and publishes
// status back.
//
// It may import projector (read side), events and schemas, and never hub.
// Neither it nor anything the spoke binary (cmd/argosy-spoke) links may
// import github.com/argoproj/argo-cd/v2; TestSpokeBinaryDoesNotLinkArgoCD and
// depguard hold that line.
//
// What is here so far:
//   - the spoke's keys (GenerateKeys, WriteKeys, LoadKeys) and argosy-spoke
//     keygen;
//   - ArgoCD, the small interface to the local Argo CD, implemented on the
//     Kubernetes API by spoke/kube;
//   - Applier, the handler of the config reader: it applies each event once
//     and in generation order, records what it applied in ConfigMaps
//     (kube.State), and acknowledges every event as applied or rejected.
//
// Still to come with the spoke issue: the run command that wires these to
// Kafka, status deltas, deployment records, heartbeats, autonomy and
// bootstrap.
package spoke
