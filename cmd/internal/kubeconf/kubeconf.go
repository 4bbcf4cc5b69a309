// Package kubeconf is the Kubernetes client configuration the commands
// that call a cluster's API share: argosy-spoke run and argosy-hub mirror.
package kubeconf

import (
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Config is the configuration of a client of the API server that the
// kubeconfig file at path names, or of the cluster the process runs in
// when path is empty, at qps requests per second with bursts of burst:
// client-go's default (5 and 10) would bound a command to a few calls a
// second.
func Config(path string, qps float32, burst int) (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	if path != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", path)
	} else {
		cfg, err = rest.InClusterConfig()
	}
	if err != nil {
		return nil, fmt.Errorf("kubernetes config: %w", err)
	}
	cfg.QPS, cfg.Burst = qps, burst
	return cfg, nil
}
