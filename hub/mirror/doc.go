// Package mirror keeps the fleet's Applications, as the hub's views hold
// them, in a Kubernetes cluster that runs a stock Argo CD: one namespace
// per workload cluster, one Application in it for every Application the
// cluster runs, with the spec the hub wants (or the spec the cluster
// published, for an Application it owns) and the status its agent
// reported. Argo CD's UI, API server and CLI then show the whole fleet.
//
// The mirror reads the hub's read API and writes only to the mirror
// cluster: it appends nothing to the log and holds no credentials to a
// workload cluster. Every object it writes carries Argo CD's
// skip-reconcile annotation, so the mirror cluster's application
// controller never compares, syncs or prunes it.
//
// Two ways in relay changes made in the mirror cluster to the hub, for the
// person who made them: Admission, a mutating admission webhook, for the
// Kubernetes user; UIProxy, a proxy of Argo CD's API server, for the Argo
// CD user of the session, which also answers the calls the API server
// would leave to its controller (tree, diff, manifests, logs) from the
// clusters. A change the hub refuses is refused, and Refusals has the
// mirror write why on the object.
package mirror
