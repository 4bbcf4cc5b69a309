//go:build integration

package projector_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"sigs.k8s.io/yaml"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/hub"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/hub/auth"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
	"github.com/argosyproj/argosy/internal/testenv/oidctest"
	"github.com/argosyproj/argosy/internal/testenv/testproc"
	"github.com/argosyproj/argosy/internal/testenv/tlstest"
	"github.com/argosyproj/argosy/schemas"
)

// readRig is a hub on the real broker with two clusters, prod and
// staging, and the tokens file it and the projectors share.
type readRig struct {
	t      *testing.T
	f      *fleet
	tokens map[string]string // by name
	file   auth.TokenFile
	path   string
	iss    *oidctest.Issuer
}

func newReadRig(t *testing.T) *readRig {
	t.Helper()
	r := &readRig{t: t, tokens: map[string]string{}, path: filepath.Join(t.TempDir(), "tokens.yaml"), iss: oidctest.New(t)}
	prefix := kafkatest.Prefix(t)
	topics := events.DefaultTopics(prefix)
	if err := events.EnsureTopics(t.Context(), kadm.NewClient(kafkatest.Client(t)), topics, events.TopicPlan(2, 2), 1, 1); err != nil {
		t.Fatal(err)
	}
	kafkatest.DeleteAtEnd(t, slices.Collect(maps.Values(topics))...)
	signer, err := events.GenerateSigner()
	if err != nil {
		t.Fatal(err)
	}
	r.f = &fleet{t: t, prefix: prefix, topics: topics, hubPub: signer.Public()}
	for _, tk := range []struct{ name, role, clusters string }{
		{"root", auth.RoleAdmin, ""}, {"auditor", auth.RoleViewer, ""}, {"staging-viewer", auth.RoleViewer, "env=staging"},
	} {
		r.addToken(tk.name, tk.role, tk.clusters)
	}
	r.file.OIDC = &auth.OIDC{Issuer: r.iss.URL, ClientID: "argosy", Groups: []auth.OIDCGroup{{Group: "everyone", Role: auth.RoleViewer}}}
	r.write()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s, err := hub.New([]kgo.Opt{kgo.SeedBrokers(kafkatest.Bootstrap(t))}, signer, []events.Key{events.HubAnchor("hub", signer.Public())}, nil,
		hub.WithTopics(topics), hub.WithListener(ln), hub.WithTokenFile(r.path), hub.WithTransactionalPrefix(prefix+"-writer-"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("hub Run = %v", err)
		}
	})
	url := "http://" + ln.Addr().String()
	r.waitOK(url+"/readyz", "")
	root, err := api.NewClient(url, r.tokens["root"], nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, env := range map[string]string{"prod": "prod", "staging": "staging"} {
		sk, err := events.NewSealingKey()
		if err != nil {
			t.Fatal(err)
		}
		signing, err := events.GenerateSigner()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := root.RegisterCluster(t.Context(), name, api.ClusterRequest{Labels: map[string]string{"env": env},
			SigningKey: base64Key(signing.Public()), SealingKey: base64Key(sk.Public[:])}, api.WriteOptions{}); err != nil {
			t.Fatalf("register %s: %v", name, err)
		}
	}
	return r
}

func (r *readRig) addToken(name, role, clusters string) {
	r.t.Helper()
	tok, entry, err := auth.NewToken(name, role, nil, clusters)
	if err != nil {
		r.t.Fatal(err)
	}
	r.tokens[name] = tok
	r.file.Tokens = append(r.file.Tokens, entry)
}

// write writes the tokens file whole, as a Secret's volume changes it.
func (r *readRig) write() {
	r.t.Helper()
	b, err := yaml.Marshal(r.file)
	if err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(r.path+".tmp", b, 0o600); err != nil {
		r.t.Fatal(err)
	}
	if err := os.Rename(r.path+".tmp", r.path); err != nil {
		r.t.Fatal(err)
	}
}

// get reads url with the bearer token tok ("": none).
func (r *readRig) get(url, tok string) (int, []byte) {
	r.t.Helper()
	req, err := http.NewRequestWithContext(r.t.Context(), http.MethodGet, url, nil)
	if err != nil {
		r.t.Fatal(err)
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, []byte(err.Error())
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		r.t.Fatal(err)
	}
	return resp.StatusCode, b
}

// waitOK waits up to a minute for url to answer 200 to tok.
func (r *readRig) waitOK(url, tok string) {
	r.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		got, b := r.get(url, tok)
		if got == http.StatusOK {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("GET %s: %d %s, want 200", url, got, b)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// projector starts the argosy projector on the rig's topics with args
// besides its own, and returns it with its metrics address.
func (r *readRig) projector(bin string, args ...string) (*testproc.Proc, string) {
	r.t.Helper()
	p := &projectorProc{t: r.t, bin: bin, dir: r.t.TempDir(), f: r.f, group: "projector." + r.f.prefix + "." + strconv.Itoa(len(args)),
		store: "sqlite://" + filepath.Join(r.t.TempDir(), "views.db"), args: args}
	proc := p.start()
	r.t.Cleanup(func() {
		if err := proc.Terminate(30 * time.Second); err != nil {
			r.t.Errorf("%v; log:\n%s", err, proc.LogTail())
		}
	})
	return proc, strings.TrimSuffix(p.metrics, "/metrics")
}

// readRoutes returns the path of every read API route of the OpenAPI
// document of /api/v1 (its operations with a read tag), its path
// parameters filled in with cluster.
func readRoutes(t *testing.T, cluster string) []string {
	t.Helper()
	var doc struct {
		Paths map[string]map[string]struct {
			Tags []string `json:"tags"`
		} `json:"paths"`
	}
	if err := yaml.Unmarshal(schemas.OpenAPI, &doc); err != nil {
		t.Fatal(err)
	}
	var out []string
	for path, ops := range doc.Paths {
		if !slices.ContainsFunc(ops["get"].Tags, func(tag string) bool {
			return slices.Contains([]string{"fleet", "audit", "deployments", "meta"}, tag)
		}) {
			continue
		}
		out = append(out, strings.NewReplacer("{name}", cluster, "{cluster}", cluster).Replace(path))
	}
	if len(out) < 10 {
		t.Fatalf("the read API's document has %d paths: %v", len(out), out)
	}
	slices.Sort(out)
	return out
}

// TestProjectorReadAPIIsGuarded runs the projector with its read API on
// the hub's tokens file: every route of the read API answers 401 without a
// token and with a bad one, 403 to a caller with no role, and a token's
// reads stay in its scope, as through the hub; the metrics endpoint takes
// no token; a token added to the file works at once.
func TestProjectorReadAPIIsGuarded(t *testing.T) {
	r := newReadRig(t)
	ports, err := testproc.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	base := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	proc, metrics := r.projector(buildArgosy(t), "--listen", fmt.Sprintf("127.0.0.1:%d", ports[0]), "--tokens", r.path)
	// Both clusters folded, as a token of every cluster sees them.
	deadline := time.Now().Add(time.Minute)
	for {
		status, b := r.get(base+"/api/v1/clusters", r.tokens["auditor"])
		if status == http.StatusOK && strings.Contains(string(b), `"staging"`) && strings.Contains(string(b), `"prod"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the auditor never read both clusters: %d %s\n%s", status, b, proc.LogTail())
		}
		time.Sleep(200 * time.Millisecond)
	}

	noRole := r.iss.Token(t, oidctest.Claims{Subject: "u-1", Audience: "argosy", Expiry: time.Now().Add(time.Hour),
		Extra: map[string]any{"email": "eve@example.com", "email_verified": true, "groups": []string{"contractors"}}})
	for _, path := range readRoutes(t, "prod") {
		for name, tok := range map[string]string{
			"no token":          "",
			"an unknown token":  "argosy_nope",
			"a token's hash":    auth.HashToken(r.tokens["auditor"]),
			"a forged ID token": "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.x",
		} {
			if status, b := r.get(base+path, tok); status != http.StatusUnauthorized {
				t.Errorf("GET %s with %s: %d %s, want 401", path, name, status, b)
			}
		}
		if status, b := r.get(base+path, noRole); status != http.StatusForbidden {
			t.Errorf("GET %s as an OIDC caller of no listed group: %d %s, want 403", path, status, b)
		}
		// Past the guard: the read API's own answer (a report wants its
		// parameters, say), never a refusal of the token.
		if status, b := r.get(base+path, r.tokens["auditor"]); status == http.StatusUnauthorized || status == http.StatusForbidden || status >= 500 {
			t.Errorf("GET %s as the auditor: %d %s", path, status, b)
		}
	}

	clusters := func(tok string) []string {
		t.Helper()
		status, b := r.get(base+"/api/v1/clusters", tok)
		var v struct {
			Items []struct {
				Name string `json:"name"`
			} `json:"items"`
		}
		if err := json.Unmarshal(b, &v); status != http.StatusOK || err != nil {
			t.Fatalf("clusters: %d %s %v", status, b, err)
		}
		var out []string
		for _, it := range v.Items {
			out = append(out, it.Name)
		}
		slices.Sort(out)
		return out
	}
	if got := clusters(r.tokens["auditor"]); !slices.Equal(got, []string{"prod", "staging"}) {
		t.Errorf("the auditor reads clusters %v", got)
	}
	if got := clusters(r.tokens["staging-viewer"]); !slices.Equal(got, []string{"staging"}) {
		t.Errorf("a token limited to env=staging reads clusters %v, want only staging", got)
	}
	for _, path := range []string{"/api/v1/clusters/prod", "/api/v1/clusters/prod/applications"} {
		if status, b := r.get(base+path, r.tokens["staging-viewer"]); status != http.StatusNotFound {
			t.Errorf("GET %s limited to env=staging: %d %s, want 404", path, status, b)
		}
	}

	// The tokens file is followed: a token added reads within seconds.
	r.addToken("late", auth.RoleViewer, "")
	r.write()
	r.waitOK(base+"/api/v1/clusters", r.tokens["late"])

	// The metrics endpoint stays open to scrapers: no token, no 401.
	for _, path := range []string{"/metrics", "/healthz", "/readyz"} {
		r.waitOK(metrics+path, "")
	}
	if got, want := listening(t, proc.Pid()), []int{ports[0], portOf(t, metrics)}; !slices.Equal(got, sorted(want)) {
		t.Errorf("the projector listens on %v, want %v (read API and metrics)", got, sorted(want))
	}
}

// TestProjectorReadAPIOverTLS: with --tls-cert and --tls-key the read API
// answers over TLS only, so the bearer tokens it takes never cross the
// network in the clear.
func TestProjectorReadAPIOverTLS(t *testing.T) {
	r := newReadRig(t)
	ca := tlstest.NewCA(t, "argosy test CA")
	cert, key := ca.WriteFiles(t, t.TempDir(), "127.0.0.1")
	ports, err := testproc.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	proc, _ := r.projector(buildArgosy(t), "--listen", addr, "--tokens", r.path, "--tls-cert", cert, "--tls-key", key)
	client := ca.Client()
	deadline := time.Now().Add(time.Minute)
	for {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "https://"+addr+"/api/v1/clusters", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+r.tokens["auditor"])
		resp, err := client.Do(req)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && strings.Contains(string(b), `"prod"`) {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the read API over TLS never answered: %v\n%s", err, proc.LogTail())
		}
		time.Sleep(200 * time.Millisecond)
	}
	if status, b := r.get("http://"+addr+"/api/v1/clusters", r.tokens["auditor"]); status == http.StatusOK {
		t.Errorf("plain HTTP to the read API: %d %s, want no answer", status, b)
	}
}

// TestProjectorServesNoReadAPIByDefault: without --listen the projector
// listens on its metrics address only, and --listen without --tokens, or
// --tokens without --listen, is refused.
func TestProjectorServesNoReadAPIByDefault(t *testing.T) {
	r := newReadRig(t)
	bin := buildArgosy(t)
	proc, metrics := r.projector(bin)
	r.waitOK(metrics+"/readyz", "")
	if got, want := listening(t, proc.Pid()), []int{portOf(t, metrics)}; !slices.Equal(got, want) {
		t.Errorf("the projector listens on %v, want %v (metrics only)", got, want)
	}
	for _, args := range [][]string{{"--listen", "127.0.0.1:0"}, {"--tokens", r.path}, {"--tls-cert", r.path}, {"--tls-cert", r.path, "--tls-key", r.path}} {
		p := &projectorProc{t: t, bin: bin, dir: t.TempDir(), f: r.f, group: "refused." + r.f.prefix,
			store: "sqlite://" + filepath.Join(t.TempDir(), "views.db"), args: args}
		proc := p.start()
		exited, err := proc.WaitExit(30 * time.Second)
		if !exited || err == nil {
			t.Errorf("projector %v: exited %v, %v; want it refused", args, exited, err)
			if !exited {
				if err := proc.Stop(5 * time.Second); err != nil {
					t.Log(err)
				}
			}
		}
	}
}

func base64Key(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

func portOf(t *testing.T, url string) int {
	t.Helper()
	_, port, err := net.SplitHostPort(strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func sorted(s []int) []int { slices.Sort(s); return s }

// listening returns the TCP ports a process listens on, sorted: its
// sockets (/proc/PID/fd) that its network namespace's tables list in
// state LISTEN.
func listening(t *testing.T, pid int) []int {
	t.Helper()
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err == nil && strings.HasPrefix(l, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	var ports []int
	for _, table := range []string{"tcp", "tcp6"} {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, table))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) < 10 || f[3] != "0A" || !inodes[f[9]] { // 0A: LISTEN
				continue
			}
			_, hexPort, _ := strings.Cut(f[1], ":")
			port, err := strconv.ParseInt(hexPort, 16, 32)
			if err != nil {
				t.Fatal(err)
			}
			ports = append(ports, int(port))
		}
	}
	slices.Sort(ports)
	return ports
}
