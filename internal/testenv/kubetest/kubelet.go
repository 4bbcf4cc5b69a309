package kubetest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// LogLine is one line a container wrote, and when.
type LogLine struct {
	Time time.Time
	Text string
}

// StartKubelet registers a Node whose kubelet endpoint is a server of
// this process, and returns the Node's name. No container runs here (the
// environment has no container runtime): the server answers the kubelet's
// container log endpoint, which the API server's pods/log of a Pod bound
// to the Node calls, with the lines logs gives for the Pod's container,
// as the kubelet reads a container's log: tailLines, sinceSeconds and
// timestamps (each line then begins with its time, RFC 3339 with
// nanoseconds, and a space). Anything else is 404. The Node and the
// server go when the test ends.
func (e *Env) StartKubelet(t testing.TB, logs func(namespace, pod, container string) []LogLine) string {
	t.Helper()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/containerLogs/"), "/")
		if r.Method != http.MethodGet || !strings.HasPrefix(r.URL.Path, "/containerLogs/") || len(parts) != 3 {
			http.NotFound(w, r)
			return
		}
		q := r.URL.Query()
		lines := logs(parts[0], parts[1], parts[2])
		if s, err := strconv.ParseInt(q.Get("sinceSeconds"), 10, 64); err == nil && s > 0 {
			from := time.Now().Add(-time.Duration(s) * time.Second)
			kept := lines[:0:0]
			for _, l := range lines {
				if !l.Time.Before(from) {
					kept = append(kept, l)
				}
			}
			lines = kept
		}
		if n, err := strconv.Atoi(q.Get("tailLines")); err == nil && n >= 0 && n < len(lines) {
			lines = lines[len(lines)-n:]
		}
		w.Header().Set("Content-Type", "text/plain")
		for _, l := range lines {
			if q.Get("timestamps") == "true" {
				fmt.Fprintf(w, "%s %s\n", l.Time.UTC().Format(time.RFC3339Nano), l.Text)
			} else {
				fmt.Fprintln(w, l.Text)
			}
		}
	}))
	t.Cleanup(srv.Close)
	port, err := strconv.Atoi(srv.URL[strings.LastIndex(srv.URL, ":")+1:])
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(e.Admin)
	if err != nil {
		t.Fatal(err)
	}
	node, err := cs.CoreV1().Nodes().Create(t.Context(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "kubelet-" + randomSuffix(6)}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cs.CoreV1().Nodes().Delete(context.Background(), node.Name, metav1.DeleteOptions{}); err != nil {
			t.Logf("delete node %s: %v", node.Name, err)
		}
	})
	node.Status = corev1.NodeStatus{
		Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}},
		DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: int32(port)}},
		Conditions:      []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now()}},
	}
	if _, err := cs.CoreV1().Nodes().UpdateStatus(t.Context(), node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return node.Name
}
