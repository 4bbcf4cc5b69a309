// Package live answers live questions about one Argo CD Application from
// its workload cluster's API: its resource tree (Source.Tree), the live
// object of one resource of that tree (Source.Manifest) and a Pod's recent
// log lines (Source.Logs).
//
// Every answer is about one Application, and a request can only reach an
// object of that Application's tree: its managed resources (from the
// Application's .status.resources) and what they own, found through
// ownerReferences. Anything else is ErrNotInApp, so a question about an
// Application never reads another object of the cluster, such as another
// team's Secret. Secrets are masked, and trees and logs are bounded.
//
// The package holds no transport: the agent answers the hub's questions
// with it. It reads the cluster with the dynamic client and Pod logs
// through a LogReader (PodLogs on the Kubernetes REST API); it links
// neither Argo CD nor client-go's typed clientset, which the spoke binary
// must not link (spoke/deps_test.go).
package live
