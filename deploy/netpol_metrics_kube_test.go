//go:build integration

package deploy_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/argosyproj/argosy/internal/testenv/kubetest"
)

// TestNetworkPolicyMetricsNeverOpen: the metrics ports take no token, so
// no value of networkPolicy.metricsFrom opens them to every pod: an empty
// list, or null (the usual way to clear a chart default), is refused or
// renders a rule that lets no stranger in.
func TestNetworkPolicyMetricsNeverOpen(t *testing.T) {
	for name, args := range map[string][]string{
		"empty list": {"--set", "hubPublicKey=k", "--set-json", "networkPolicy.metricsFrom=[]"},
		"null":       {"--set", "hubPublicKey=k", "--set", "networkPolicy.metricsFrom=null"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := kubetest.Helm(t.Context(), append([]string{"template", "argosy", chart, "--namespace", "argosy"}, args...)...); err != nil {
				return // refused: fine
			}
			r := renderPolicies(t, args...)
			if allowed(r.policies, flow{From: stranger, To: r.pods["hub"], Port: 9466, Protocol: corev1.ProtocolTCP}) {
				t.Errorf("networkPolicy.metricsFrom %s: a pod of any namespace reaches the hub's /metrics (9466)", name)
			}
		})
	}
}
