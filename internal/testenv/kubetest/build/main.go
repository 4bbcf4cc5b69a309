// Command build builds and caches the servers internal/testenv/kubetest runs
// (etcd, kube-apiserver, kube-controller-manager, kubectl and Argo CD), and
// the tools the deployment is checked with (helm, the ServiceMonitor CRD),
// and prints where they are. `make kube-tools` runs it; tests build what is
// missing too.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"

	"github.com/argosyproj/argosy/internal/testenv/kubetest"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "kube-tools:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	b, err := kubetest.Build(ctx, os.Stderr)
	if err != nil {
		return err
	}
	out, err := json.MarshalIndent(b, "", "  ")
	if err != nil {
		return err
	}
	fmt.Println(string(out))
	return nil
}
