//go:build integration

package dev_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
	"github.com/argosyproj/argosy/internal/testenv/testproc"
)

// TestDevAsANewUser does what the README tells a new user to: it runs
// argosy dev (the built binaries, no Kafka, no Kubernetes), then, as from
// a second terminal, the commands it prints: the fleet, an app placed on
// every env=staging cluster, watched until it converges, its audit trail
// and a deployment report. Ctrl-C stops everything with status 0. Run
// again, it finds the same fleet and the app where it was.
func TestDevAsANewUser(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	for _, b := range []string{"argosy", "argosy-dev"} {
		if out, err := exec.Command("go", "build", "-o", filepath.Join(bin, b), "github.com/argosyproj/argosy/cmd/"+b).CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", b, err, out)
		}
	}
	ports, err := testproc.FreePorts(2)
	if err != nil {
		t.Fatal(err)
	}
	env := []string{"ARGOSY_CONFIG=" + filepath.Join(dir, "config.yaml"), "ARGOSY_SERVER=", "ARGOSY_TOKEN=", "ARGOSY_CONTEXT="}
	data := filepath.Join(dir, "data")
	start := func(name string) *testproc.Proc {
		t.Helper()
		p, err := testproc.Start(dir, name, filepath.Join(bin, "argosy"), []string{"dev", "--data-dir", data, "--clusters", "6",
			"--listen", fmt.Sprintf("127.0.0.1:%d", ports[0]), "--metrics-address", fmt.Sprintf("127.0.0.1:%d", ports[1]),
			"--offline-every", "0"}, env)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Stop(5 * time.Second) })
		waitFor(t, 3*time.Minute, name+" says it is ready and made a context", func() bool {
			return strings.Contains(p.LogTail(), `Context "dev"`)
		}, p)
		return p
	}
	var lastErr string // what the last command wrote to stderr
	try := func(args ...string) (string, error) {
		cmd := exec.Command(filepath.Join(bin, "argosy"), args...)
		cmd.Env = append(os.Environ(), env...)
		cmd.Dir = filepath.Join("..", "..", "..", "..") // the repository, where the README's commands run
		var out, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &stderr
		err := cmd.Run()
		lastErr = stderr.String()
		if err != nil {
			return "", fmt.Errorf("argosy %s: %w\n%s%s", strings.Join(args, " "), err, out.String(), stderr.String())
		}
		return out.String(), nil
	}
	argosy := func(args ...string) string {
		t.Helper()
		out, err := try(args...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}

	p := start("dev")
	var fleet []struct {
		Name      string `json:"name"`
		Connected bool   `json:"connected"`
	}
	waitFor(t, time.Minute, "six connected clusters", func() bool {
		return json.Unmarshal([]byte(argosy("fleet", "-o", "json")), &fleet) == nil && len(fleet) == 6 &&
			!slices.ContainsFunc(fleet, func(c struct {
				Name      string `json:"name"`
				Connected bool   `json:"connected"`
			}) bool {
				return !c.Connected
			})
	}, p)
	staging := []string{"sim-001", "sim-004"} // sim.Labels: every third cluster from the second
	// --wait follows the placement to both staging clusters. The simulated
	// Argo CD fails one sync in ten and turns one Application in ten
	// Degraded for up to two minutes: the wait ends converged, or fails
	// naming the sync that failed.
	out, err := try("app", "apply", "-f", "docs/examples/guestbook.yaml", "--selector", "env=staging", "--wait", "--timeout", "5m")
	if placed := "Placed argocd/guestbook (placement generation 1) on the 2 clusters (sim-001, sim-004) that env=staging matches now"; !strings.Contains(lastErr, placed) ||
		(err == nil) != strings.Contains(lastErr, "argocd/guestbook: 2 of 2 clusters converged") ||
		(err != nil && !strings.Contains(err.Error(), "Argo CD's sync ended Failed: one or more objects failed to apply")) {
		t.Errorf("app apply --wait: %v\nstdout:\n%s\nstderr:\n%s", err, out, lastErr)
	}
	converged := func() bool {
		var apps []struct {
			Cluster  string                      `json:"cluster"`
			Desired  *struct{ Generation int64 } `json:"desired"`
			Observed *struct {
				AppliedGeneration int64                    `json:"appliedGeneration"`
				Sync              *struct{ Status string } `json:"sync"`
			} `json:"observed"`
		}
		out, err := try("app", "status", "guestbook", "-o", "json") // an error until the placement wrote it
		if err != nil || json.Unmarshal([]byte(out), &apps) != nil || len(apps) != len(staging) {
			return false
		}
		for i, a := range apps {
			if a.Cluster != staging[i] || a.Observed == nil || a.Observed.AppliedGeneration != 1 || a.Observed.Sync == nil || a.Observed.Sync.Status != "Synced" {
				return false
			}
		}
		return true
	}
	waitFor(t, 2*time.Minute, "guestbook applied and synced on every staging cluster", converged, p)
	// The polls above are audited reads, which the timeline leaves out:
	// the placement is one action, folding in its clusters' Applications.
	if out := argosy("audit"); !strings.Contains(out, "placements/argocd/guestbook") || !strings.Contains(out, "placements.apply") ||
		strings.Contains(out, "api/read") {
		t.Errorf("the audit timeline does not show the placement as one action, or shows reads:\n%s", out)
	}
	if out := argosy("audit", "--group", "none", "--app", "guestbook"); !strings.Contains(out, "applications/argocd/guestbook") {
		t.Errorf("the audit entries do not show the placement's applications:\n%s", out)
	}
	waitFor(t, time.Minute, "a deployment report with both deployments", func() bool {
		var rep struct {
			Rows []struct {
				Group       string `json:"group"`
				Deployments int    `json:"deployments"`
			} `json:"rows"`
		}
		if json.Unmarshal([]byte(argosy("report", "deployments", "--by", "app", "-o", "json")), &rep) != nil {
			return false
		}
		n := 0
		for _, r := range rep.Rows {
			n += r.Deployments
		}
		return n >= len(staging)
	}, p)

	// The log read directly, through the context argosy dev made: no
	// broker, key or timestamp flags, and nothing refused on the way.
	asOf := argosy("replay", "as-of", time.Now().UTC().Format(time.RFC3339), "--cluster", staging[0], "--app", "guestbook")
	if !strings.Contains(asOf, "guestbook") || lastErr != "" {
		t.Errorf("replay as-of through the dev context:\n%s\nstderr:\n%s", asOf, lastErr)
	}
	if rows := argosy("export", "--topics", "audit", "--out", "-", "-q"); !strings.Contains(rows, "placements.apply") || lastErr != "" {
		t.Errorf("export through the dev context: %d bytes, no placements.apply call in them, or stderr:\n%s", len(rows), lastErr)
	}

	// A sync followed to its end: the simulated Argo CD ends nine in ten
	// syncs Succeeded and one Failed, and --wait says which.
	out, err = try("app", "sync", "guestbook", "--cluster", staging[0], "--wait", "--timeout", "2m", "-o", "json")
	switch {
	case err == nil && strings.HasSuffix(out, "Succeeded\n"):
	case err != nil && strings.Contains(err.Error(), "ended Failed"):
	default:
		t.Errorf("app sync --wait: %q, %v; want Succeeded, or an error that it ended Failed", out, err)
	}

	// Ctrl-C: the terminal signals the whole foreground process group.
	if err := syscall.Kill(-p.Pid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if ok, err := p.WaitExit(time.Minute); !ok || err != nil {
		t.Fatalf("argosy dev after Ctrl-C: exited %v, %v\n%s", ok, err, p.LogTail())
	}
	if !strings.Contains(p.LogTail(), "argosy dev stopped") {
		t.Errorf("no word that it stopped:\n%s", p.LogTail())
	}

	p = start("dev-again")
	waitFor(t, time.Minute, "the same fleet and app after a restart", func() bool {
		return json.Unmarshal([]byte(argosy("fleet", "-o", "json")), &fleet) == nil && len(fleet) == 6 && converged()
	}, p)
}

func waitFor(t *testing.T, within time.Duration, what string, ok func() bool, p *testproc.Proc) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !ok() {
		if exited, err := p.Exited(); exited {
			t.Fatalf("argosy dev exited (%v) while waiting for %s:\n%s", err, what, p.LogTail())
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s; argosy dev says:\n%s", within, what, p.LogTail())
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// TestDevOnARealBroker runs argosy-dev with --broker: the real Kafka
// stamps records with its LogAppendTime, and the components, which accept
// nothing else then, run the fleet on it.
func TestDevOnARealBroker(t *testing.T) {
	dir := t.TempDir()
	devBin := filepath.Join(dir, "argosy-dev")
	if out, err := exec.Command("go", "build", "-o", devBin, "github.com/argosyproj/argosy/cmd/argosy-dev").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	ports, err := testproc.FreePorts(2)
	if err != nil {
		t.Fatal(err)
	}
	prefix := kafkatest.Prefix(t)
	p, err := testproc.Start(dir, "dev", devBin, []string{"--data-dir", filepath.Join(dir, "data"), "--clusters", "3",
		"--broker", kafkatest.Bootstrap(t), "--topic-prefix", prefix, "--offline-every", "0",
		"--listen", fmt.Sprintf("127.0.0.1:%d", ports[0]), "--metrics-address", fmt.Sprintf("127.0.0.1:%d", ports[1])}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := p.Terminate(time.Minute); err != nil {
			t.Error(err)
		}
		names, _ := kadm.NewClient(kafkatest.Client(t)).ListTopics(context.Background())
		var ours []string
		for _, n := range names.Names() {
			if strings.HasPrefix(n, prefix) {
				ours = append(ours, n)
			}
		}
		kafkatest.DeleteAtEnd(t, ours...)
	}()
	waitFor(t, 2*time.Minute, "ready", func() bool { return strings.Contains(p.LogTail(), "Argosy is ready") }, p)
	var ready struct {
		URL   string `json:"url"`
		Token string `json:"token"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "data", "dev.json"))
	if err != nil || json.Unmarshal(b, &ready) != nil {
		t.Fatalf("dev.json: %v %s", err, b)
	}
	waitFor(t, time.Minute, "three clusters heartbeating through the real broker", func() bool {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, ready.URL+"/api/v1/clusters", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+ready.Token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var list struct {
			Items []struct {
				Connected bool `json:"connected"`
			} `json:"items"`
		}
		if json.NewDecoder(resp.Body).Decode(&list) != nil || len(list.Items) != 3 {
			return false
		}
		for _, c := range list.Items {
			if !c.Connected {
				return false
			}
		}
		return true
	}, p)
}

func TestMain(m *testing.M) { os.Exit(kafkatest.Main(m)) }
