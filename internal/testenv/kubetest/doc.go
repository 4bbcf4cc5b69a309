// Package kubetest runs a real Kubernetes API (etcd and kube-apiserver, plus
// the garbage-collector and namespace controllers) and, on demand, a real
// Argo CD (repo-server and application-controller) for tests, all on
// 127.0.0.1. The servers are built from their Go modules into the user's
// cache on first use; see Build and docs/testing.md. WriteJSONSchemas turns
// the running apiserver's OpenAPI (its CRDs' included) into the JSON
// Schemas kubeconform validates manifests against, since no network is
// there to fetch them from.
package kubetest
