// Package testenv holds the real servers Argosy's integration tests run
// against, one package each: kafkatest (an Apache Kafka broker from Maven
// Central's jars), kubetest (etcd, kube-apiserver and Argo CD built from their
// Go modules), pgtest (a PostgreSQL server from the machine's packages),
// testproc (the processes they run as, which die with the test binary),
// tlstest (a certificate authority for servers that speak TLS) and
// toolcache (the pinned tools and jars they need, cached once per machine).
//
// Tests alone import these packages, usually from TestMain. Production code
// never does: test servers never ship in a binary, and depguard in
// .golangci.yml enforces it.
package testenv
