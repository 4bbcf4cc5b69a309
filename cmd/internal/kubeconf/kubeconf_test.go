package kubeconf_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argosyproj/argosy/cmd/internal/kubeconf"
)

func TestConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	const file = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := kubeconf.Config(path, 50, 100)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://127.0.0.1:6443" || cfg.BearerToken != "t" || cfg.QPS != 50 || cfg.Burst != 100 {
		t.Errorf("config %s %q %v %v", cfg.Host, cfg.BearerToken, cfg.QPS, cfg.Burst)
	}
	if _, err := kubeconf.Config(filepath.Join(t.TempDir(), "missing"), 5, 10); err == nil || !strings.HasPrefix(err.Error(), "kubernetes config: ") {
		t.Errorf("a missing file: %v, want an error naming the Kubernetes config", err)
	}
}
