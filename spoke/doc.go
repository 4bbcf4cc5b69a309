// Package spoke is the agent that runs in each workload cluster: it reads
// its cluster's partition of the config topic, applies what it reads to the
// local Argo CD, and reports back: acknowledgements, status deltas,
// deployment records and heartbeats.
//
// Its API is the Agent: New, with the agent's keys (GenerateKeys,
// WriteKeys, LoadKeys), its seams to the cluster (ArgoCD and its
// Operations, a StatusSource, a Store) and functional options, then Run.
// spoke/kube implements the seams on the Kubernetes API, keeping the
// agent's state in ConfigMaps; spoke/live answers live questions about one
// Application (its tree, a manifest, a Pod's logs) from the cluster's API,
// confined to that Application's resources. Only New builds the parts it
// assembles:
//   - the trust follower, which keeps the hub's keys, and the config
//     reader of the agent's partition (package events);
//   - the applier, which applies each config event once and in generation
//     order, records what it applied in the Store and acknowledges every
//     event as applied or rejected; the operator, which runs the syncs and
//     rollbacks it queues on Argo CD;
//   - the bootstrap, which brings a new or wiped agent to its cluster's
//     whole desired state from the compacted desired-state topic, and
//     recovers config records lost from the log;
//   - the status reporter (deltas and periodic resyncs), the deployment
//     recorder, the guard of the agent's mode (managed or autonomous) and
//     the heartbeater.
//
// It may import projector (read side), events and schemas, and never hub.
// Neither it nor anything the spoke binary (cmd/argosy-spoke) links may
// import github.com/argoproj/argo-cd/v2; TestSpokeBinaryDoesNotLinkArgoCD and
// depguard hold that line.
package spoke
