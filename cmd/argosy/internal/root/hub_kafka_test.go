//go:build integration

package root

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/cmd/argosy/internal/cmdtest"
	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/hub"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/hub/auth"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
	"github.com/argosyproj/argosy/schemas"
	"github.com/argosyproj/argosy/spoke"
)

func TestMain(m *testing.M) { os.Exit(kafkatest.Main(m)) }

// realHub is a hub running in this process on the real broker, with its
// own topics, until the test ends.
type realHub struct {
	t      *testing.T
	url    string
	topics events.Topics
	signer *events.Signer
	tokens map[string]string // by actor: root (admin), auditor (viewer)
}

// startHub starts a hub with opts besides the test's topics, listener and
// transactional prefix.
func startHub(t *testing.T, opts ...hub.Option) *realHub {
	t.Helper()
	h := &realHub{t: t, topics: events.DefaultTopics(kafkatest.Prefix(t)), tokens: map[string]string{}}
	if err := events.EnsureTopics(t.Context(), kadm.NewClient(kafkatest.Client(t)), h.topics, events.TopicPlan(2, 2), 1, 1); err != nil {
		t.Fatal(err)
	}
	kafkatest.DeleteAtEnd(t, slices.Collect(maps.Values(h.topics))...)
	var err error
	if h.signer, err = events.GenerateSigner(); err != nil {
		t.Fatal(err)
	}
	var tokens []auth.Token
	for _, tk := range []struct{ name, role string }{{"root", auth.RoleAdmin}, {"auditor", auth.RoleViewer}} {
		tok, entry, err := auth.NewToken(tk.name, tk.role, nil, "")
		if err != nil {
			t.Fatal(err)
		}
		h.tokens[tk.name] = tok
		tokens = append(tokens, entry)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s, err := hub.New([]kgo.Opt{kgo.SeedBrokers(kafkatest.Bootstrap(t))}, h.signer, []events.Key{events.HubAnchor("hub", h.signer.Public())}, tokens,
		append([]hub.Option{hub.WithTopics(h.topics), hub.WithListener(ln),
			hub.WithTransactionalPrefix(h.topics[events.TopicConfig] + "-writer-")}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("hub Run = %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("hub Run did not return within 30 s of its context ending")
		}
	})
	h.url = "http://" + ln.Addr().String()
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := http.Get(h.url + "/readyz") //nolint:noctx // a loopback probe
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return h
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("hub at %s never ready: %v", h.url, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// runIn runs the argosy command with stdin and args, as the binary would.
func runIn(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	io := cmdkit.IOStreams{In: strings.NewReader(stdin), Out: &out, Err: &errOut}
	cmd := NewRoot(io)
	cmd.SetArgs(append([]string{}, args...))
	code = cmdkit.Execute(t.Context(), cmd, io)
	return code, out.String(), errOut.String()
}

// expect is one command of a session and what it must print: stdout and
// stderr must each hold every string given.
type expect struct {
	stdin  string
	args   []string
	code   int
	stdout []string
	stderr []string
}

func (e expect) run(t *testing.T) string {
	t.Helper()
	code, stdout, stderr := runIn(t, e.stdin, e.args...)
	ok := code == e.code
	for _, s := range e.stdout {
		ok = ok && strings.Contains(stdout, s)
	}
	for _, s := range e.stderr {
		ok = ok && strings.Contains(stderr, s)
	}
	if !ok {
		t.Fatalf("argosy %s: exit %d\nstdout:\n%s\nstderr:\n%s\nwant exit %d, stdout holding %q, stderr holding %q",
			strings.Join(e.args, " "), code, stdout, stderr, e.code, e.stdout, e.stderr)
	}
	return stdout
}

// keys writes a cluster's keys as argosy-spoke keygen --dir does.
func keys(t *testing.T, cluster string) (string, spoke.Keys) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), cluster)
	k, err := spoke.GenerateKeys()
	if err != nil {
		t.Fatal(err)
	}
	if err := spoke.WriteKeys(dir, cluster, k); err != nil {
		t.Fatal(err)
	}
	return dir, k
}

// login logs in to h as root, in the context "hub", which becomes current.
func (h *realHub) login(t *testing.T) {
	t.Helper()
	const actor = "root"
	expect{stdin: h.tokens[actor] + "\n", args: []string{"login", h.url, "--token-stdin", "--name", "hub"},
		stdout: []string{"Logged in to " + h.url + " as " + actor}}.run(t)
}

// config returns the decoded events of the config topic, read committed.
func (h *realHub) config(t *testing.T) []*events.Decoded {
	t.Helper()
	dec, err := events.NewDecoder(events.NewVerifier(events.NewRegistry(events.HubAnchor("hub", h.signer.Public()))), events.WithTopics(h.topics))
	if err != nil {
		t.Fatal(err)
	}
	var out []*events.Decoded
	for _, r := range kafkatest.Committed(t, h.topics[events.TopicConfig]) {
		d, err := dec.Decode(t.Context(), r)
		if err != nil {
			t.Fatalf("%s/%d@%d: %v", r.Topic, r.Partition, r.Offset, err)
		}
		out = append(out, d)
	}
	return out
}

// ends returns the end offsets of the config, desired-state and trust
// topics.
func (h *realHub) ends(t *testing.T) map[string]map[int32]int64 {
	t.Helper()
	out := map[string]map[int32]int64{}
	for _, role := range []events.Topic{events.TopicConfig, events.TopicDesired, events.TopicTrust} {
		listed, err := kadm.NewClient(kafkatest.Client(t)).ListEndOffsets(t.Context(), h.topics[role])
		if err != nil {
			t.Fatal(err)
		}
		out[h.topics[role]] = map[int32]int64{}
		listed.Each(func(o kadm.ListedOffset) { out[h.topics[role]][o.Partition] = o.Offset })
	}
	return out
}

// TestClusterRegisterOnTheHub registers a cluster with the keys
// argosy-spoke keygen writes, lists it, registers it again (a conflict
// that says what to do), changes its labels with --overwrite and with
// cluster label, on a real hub.
func TestClusterRegisterOnTheHub(t *testing.T) {
	cmdtest.Isolate(t)
	h := startHub(t)
	h.login(t)
	dir, _ := keys(t, "prod-eu")
	for _, e := range []expect{
		{args: []string{"cluster", "register", "prod-eu", "--labels", "env=prod", "--keys-dir", dir},
			stdout: []string{"TYPE                CLUSTER  KIND      NAMESPACE  NAME     GENERATION  OFFSET\ncluster.registered  prod-eu  clusters  -          prod-eu  1  "}},
		{args: []string{"cluster", "list"}, stdout: []string{"NAME     LABELS    GENERATION  PARTITION\nprod-eu  env=prod  1  "}},
		{args: []string{"cluster", "register", "prod-eu", "--labels", "env=prod", "--keys-dir", dir}, code: 1,
			stderr: []string{"Error: the hub refused the request (409 Conflict): cluster prod-eu already exists (generation 1)\n" +
				"  next: to change its labels: argosy cluster register prod-eu --labels … --overwrite, or argosy cluster label prod-eu K=V\n"}},
		{args: []string{"cluster", "register", "prod-eu", "--labels", "env=prod,tier=1", "--overwrite"}, stdout: []string{"prod-eu  2  "}},
		{args: []string{"cluster", "label", "prod-eu", "tier-", "region=eu"}, stdout: []string{"prod-eu  3  "}},
		{args: []string{"cluster", "label", "prod-eu", "env=dev"}, code: 1, stderr: []string{`label "env" already has a value (prod): pass --overwrite to change it`}},
	} {
		e.run(t)
	}
	var list api.ObjectList
	out := expect{args: []string{"cluster", "list", "-o", "json"}}.run(t)
	if err := json.Unmarshal([]byte(out), &list); err != nil || len(list.Items) != 1 {
		t.Fatalf("cluster list -o json: %v\n%s", err, out)
	}
	if c := list.Items[0]; c.Generation != 3 || !maps.Equal(c.Labels, map[string]string{"env": "prod", "region": "eu"}) {
		t.Errorf("cluster %+v: want generation 3, labels env=prod,region=eu", c)
	}
	regs := 0
	for _, d := range h.config(t) {
		reg, ok := d.Data.(*schemas.ClusterRegistered)
		if !ok {
			continue
		}
		regs++
		// It was never pinned, and relabelling does not pin it.
		if reg.Generation > 1 && (reg.Partition != nil || reg.SigningKeyID == "") {
			t.Errorf("registration %d: pinned to %v, keys %q: want it unpinned with its keys", reg.Generation, reg.Partition, reg.SigningKeyID)
		}
	}
	if regs != 3 {
		t.Errorf("%d registrations in the config topic, want 3", regs)
	}
}

// TestRepositoryOnTheHub adds a repository with a password from standard
// input, lists and removes it on a real hub; the password reaches the
// cluster sealed to its key, without its newline.
func TestRepositoryOnTheHub(t *testing.T) {
	cmdtest.Isolate(t)
	h := startHub(t)
	h.login(t)
	dir, k := keys(t, "c1")
	const password = "p4ss-from-stdin"
	for _, e := range []expect{
		{args: []string{"cluster", "register", "c1", "--keys-dir", dir}},
		{stdin: password + "\n", args: []string{"repo", "add", "charts", "--cluster", "c1", "--url", "https://git.example/charts.git", "--username", "bot", "--password-stdin"},
			stdout: []string{"repository.upserted  c1       repositories  argocd     charts  1  "}},
		{args: []string{"repo", "list", "--cluster", "c1"}, stdout: []string{"CLUSTER  NAMESPACE  NAME    URL                             PROJECT  GENERATION\nc1       argocd     charts  https://git.example/charts.git  -        1\n"}},
		{args: []string{"repo", "add", "charts", "--cluster", "c1", "--url", "https://git.example/charts.git"}, code: 1,
			stderr: []string{"(409 Conflict): repository ", `charts on cluster "c1" already exists (generation 1)`, "next: to replace it: argosy repo add charts --cluster c1 … --overwrite"}},
		{args: []string{"repo", "remove", "charts", "--cluster", "c1"}, stdout: []string{"repository.deleted  c1       repositories  argocd     charts  2  "}},
		{args: []string{"repo", "list", "--cluster", "c1"}, stderr: []string{"No repositories.\n"}},
		{args: []string{"repo", "remove", "charts", "--cluster", "c1"}, code: 1, stderr: []string{"(404 Not Found): no ", "next: argosy repo list --cluster c1"}},
	} {
		e.run(t)
	}
	var found bool
	for _, d := range h.config(t) {
		repo, ok := d.Data.(*schemas.RepositoryUpserted)
		if !ok {
			continue
		}
		found = true
		plain, err := events.Open(*repo.Credentials, k.Sealing)
		if err != nil {
			t.Fatal(err)
		}
		var creds map[string]string
		if err := json.Unmarshal(plain, &creds); err != nil || creds["username"] != "bot" || creds["password"] != password {
			t.Errorf("the sealed credentials open to %q (%v)", plain, err)
		}
	}
	if !found {
		t.Error("no repository.upserted in the config topic")
	}
}

// TestViewerIsRefused checks what a viewer's write says on a real hub:
// who refused what, and what to do.
func TestViewerIsRefused(t *testing.T) {
	cmdtest.Isolate(t)
	h := startHub(t)
	dir, _ := keys(t, "c1")
	expect{args: []string{"cluster", "register", "c1", "--keys-dir", dir, "--server", h.url, "--token", h.tokens["auditor"]}, code: 1,
		stderr: []string{"Error: the hub at " + h.url + " refused the request (403 Forbidden): denied: auditor may not clusters.register: role viewer, and it needs admin; " +
			"the token from --token is good but may not do this: ask the hub's administrator for a role that may, or log in with another token: argosy login " + h.url + " --token TOKEN\n"}}.run(t)
	expect{args: []string{"cluster", "list", "--server", h.url, "--token", h.tokens["auditor"]}, stderr: []string{"No clusters.\n"}}.run(t)
}

// TestDryRunWritesNothing runs writes with --dry-run on a real hub: each
// prints the events it would append, and the config, desired-state and
// trust topics do not move.
func TestDryRunWritesNothing(t *testing.T) {
	cmdtest.Isolate(t)
	h := startHub(t)
	h.login(t)
	dir1, _ := keys(t, "c1")
	dir2, _ := keys(t, "c2")
	expect{args: []string{"cluster", "register", "c1", "--keys-dir", dir1}}.run(t)
	before := h.ends(t)
	for _, e := range []expect{
		{args: []string{"cluster", "register", "c2", "--keys-dir", dir2, "--dry-run"}, stdout: []string{"cluster.registered  c2       clusters  -          c2    1           dry run\n"},
			stderr: []string{"Dry run: the hub wrote nothing.\n"}},
		{args: []string{"cluster", "label", "c1", "env=dev", "--dry-run"}, stdout: []string{"c1    2           dry run\n"}},
		{stdin: "pw\n", args: []string{"repo", "add", "r", "--cluster", "c1", "--url", "https://x.example/r.git", "--username", "u", "--password-stdin", "--dry-run"},
			stdout: []string{"repository.upserted  c1       repositories  argocd     r     1           dry run\n"}},
		{args: []string{"cluster", "deregister", "c1", "--dry-run", "-o", "json"}, stdout: []string{`"dryRun": true`}},
	} {
		e.run(t)
	}
	if after := h.ends(t); !maps.EqualFunc(before, after, maps.Equal) {
		t.Errorf("end offsets moved from %v to %v", before, after)
	}
	expect{args: []string{"cluster", "list"}, stdout: []string{"NAME  LABELS  GENERATION  PARTITION\nc1    -       1  "}}.run(t)
}

// TestResendAfterLostAnswer loses the hub's answer to a registration (the
// connection drops after the hub wrote it): the command sends it again
// with the same idempotency key, and the hub answers with what it wrote
// the first time instead of a conflict; the log holds one registration.
func TestResendAfterLostAnswer(t *testing.T) {
	cmdtest.Isolate(t)
	h := startHub(t)
	var mu sync.Mutex
	var sent []string // the idempotency keys the hub saw
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Error(err)
			return
		}
		req, err := http.NewRequestWithContext(r.Context(), r.Method, h.url+r.URL.RequestURI(), bytes.NewReader(body))
		if err != nil {
			t.Error(err)
			return
		}
		req.Header = r.Header.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return
		}
		defer resp.Body.Close()
		mu.Lock()
		sent = append(sent, r.Header.Get(api.HeaderIdempotencyKey))
		first := len(sent) == 1
		mu.Unlock()
		if first {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			conn.Close()
			return
		}
		maps.Copy(w.Header(), resp.Header)
		w.WriteHeader(resp.StatusCode)
		if _, err := io.Copy(w, resp.Body); err != nil {
			t.Error(err)
		}
	}))
	t.Cleanup(proxy.Close)
	dir, _ := keys(t, "c1")
	expect{args: []string{"cluster", "register", "c1", "--keys-dir", dir, "--server", proxy.URL, "--token", h.tokens["root"]},
		stdout: []string{"cluster.registered  c1       clusters  -          c1    1  "},
		stderr: []string{"Already written by an earlier request with the same idempotency key: nothing was written again.\n"}}.run(t)
	mu.Lock()
	defer mu.Unlock()
	if len(sent) != 2 || sent[0] == "" || sent[0] != sent[1] {
		t.Errorf("the hub saw keys %q: want the same key twice", sent)
	}
	regs := 0
	for _, d := range h.config(t) {
		if d.Spec.Type == events.TypeClusterRegistered {
			regs++
		}
	}
	if regs != 1 {
		t.Errorf("%d registrations in the config topic, want 1", regs)
	}
}

// TestPlacementOnTheHub places an Application by label selector with the
// CLI on a real hub: a cluster registered without keys gets a join token
// (printed once), the placement reaches the matching clusters, argosy app
// placements shows it, and app delete --placement removes it.
func TestPlacementOnTheHub(t *testing.T) {
	cmdtest.Isolate(t)
	h := startHub(t)
	h.login(t)
	expect{args: []string{"cluster", "register", "stage-1", "--labels", "env=staging"},
		stderr: []string{"Join token for stage-1, shown once", "argosy_join_", "argosy-spoke run --cluster stage-1 --join-token argosy_join_"}}.run(t)
	dir, _ := keys(t, "prod-1")
	expect{args: []string{"cluster", "register", "prod-1", "--labels", "env=prod", "--keys-dir", dir}}.run(t)
	manifest := filepath.Join(t.TempDir(), "web.yaml")
	if err := os.WriteFile(manifest, []byte(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: web}
spec:
  project: default
  source: {repoURL: "https://git.example/web.git", path: web}
  destination: {server: "https://kubernetes.default.svc", namespace: web}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	expect{args: []string{"app", "apply", "-f", manifest, "--selector", "env=staging"}, stdout: []string{"placement.upserted"}}.run(t)
	deadline := time.Now().Add(time.Minute)
	for {
		code, stdout, _ := runIn(t, "", "app", "placements", "web")
		if code == 0 && strings.Contains(stdout, "stage-1  placed") && !strings.Contains(stdout, "prod-1") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("app placements:\n%s", stdout)
		}
		time.Sleep(100 * time.Millisecond)
	}
	expect{args: []string{"app", "list", "--cluster", "stage-1"}, stdout: []string{"web"}}.run(t)
	expect{args: []string{"app", "delete", "web", "--placement"}, stdout: []string{"placement.deleted"}}.run(t)
	expect{args: []string{"app", "apply", "-f", manifest, "--selector", "env=staging", "--cluster", "stage-1"}, code: 2,
		stderr: []string{"give --cluster or --selector, not both"}}.run(t)
}
