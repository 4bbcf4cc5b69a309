//go:build integration

package hub_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	neturl "net/url"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/hub"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/hub/web"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
	"github.com/argosyproj/argosy/projector/read/readtest"
	"github.com/argosyproj/argosy/schemas"
)

// TestAnswerFromAnotherClusterIsIgnored plays cluster a's agent, and an
// attacker holding cluster b's key: the hub's question to a is on a's
// partition of the queries topic, signed by the hub; b's answer to it,
// signed with b's own key, is ignored, and a's answer, read after it, is
// the one the call gets. A viewer may ask for a tree and not for logs;
// an answer that says why there is none is the call's error.
func TestAnswerFromAnotherClusterIsIgnored(t *testing.T) {
	r, url, signers := liveRig(t)
	root := r.client(url, "root")
	answer := func(q *schemas.QueryRequested, as, body, code string) {
		t.Helper()
		r.answer(t, signers[as], as, q, body, code)
	}
	type result struct {
		a   *api.LiveAnswer
		err error
	}
	ask := func(f func() (*api.LiveAnswer, error)) <-chan result {
		out := make(chan result, 1)
		go func() { a, err := f(); out <- result{a, err} }()
		return out
	}
	questions := r.questions(t)

	got := ask(func() (*api.LiveAnswer, error) { return root.Tree(t.Context(), "a", "argocd", "web", 20*time.Second) })
	q := <-questions
	if q.Cluster != "a" || q.Query != schemas.QueryTree || q.RequestedBy != "root" || q.ExpiresAt.IsZero() {
		t.Fatalf("question %+v, want a tree of a's web asked by root", q)
	}
	answer(q, "b", `{"nodes":[{"kind":"Secret","name":"forged"}]}`, "")
	time.Sleep(500 * time.Millisecond) // the forgery is read first
	answer(q, "a", `{"nodes":[{"kind":"ConfigMap","name":"real"}]}`, "")
	res := <-got
	if res.err != nil || !strings.Contains(string(res.a.Answer), "real") {
		t.Fatalf("tree = %+v, %v; want a's answer, not b's", res.a, res.err)
	}

	got = ask(func() (*api.LiveAnswer, error) {
		return root.Manifest(t.Context(), "a", "argocd", "web", api.LiveTarget{Version: "v1", Kind: "Secret", Namespace: "argocd", Name: "argocd-secret"}, 20*time.Second)
	})
	q = <-questions
	if q.Target == nil || q.Target.Name != "argocd-secret" {
		t.Fatalf("question %+v, want the manifest of argocd-secret", q)
	}
	answer(q, "a", "", schemas.QueryNotInTree)
	if res := <-got; api.StatusOf(res.err) != http.StatusForbidden {
		t.Errorf("manifest answered not_in_tree: %v, want 403", res.err)
	}

	if _, err := r.client(url, "auditor").Logs(t.Context(), "a", "argocd", "web", "web", "web-1", api.LogOptions{}, time.Second); api.StatusOf(err) != http.StatusForbidden {
		t.Errorf("a viewer asking for logs: %v, want 403", err)
	}
	select {
	case q := <-questions:
		t.Errorf("a refused call asked a question: %+v", q)
	case <-time.After(time.Second):
	}
}

// liveRig starts a hub with opts, registers the clusters a and b with
// signing keys it returns, and applies the Application argocd/web to a.
func liveRig(t *testing.T, opts ...hub.Option) (*rig, string, map[string]*events.Signer) {
	t.Helper()
	r := newRig(t, 4)
	url := r.start(opts...)
	root := r.client(url, "root")
	signers := map[string]*events.Signer{}
	for _, name := range []string{"a", "b"} {
		s, err := events.GenerateSigner()
		if err != nil {
			t.Fatal(err)
		}
		signers[name] = s
		_, sealing, _ := clusterKeys(t)
		if _, err := root.RegisterCluster(t.Context(), name, api.ClusterRequest{SigningKey: base64.StdEncoding.EncodeToString(s.Public()),
			SealingKey: sealing}, api.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := root.Apply(t.Context(), api.KindApplications, api.ApplyRequest{Clusters: []string{"a"}, Manifest: appManifest()}, api.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return r, url, signers
}

// answer answers q as cluster as, signed by s: body, or code.
func (r *rig) answer(t *testing.T, s *events.Signer, as string, q *schemas.QueryRequested, body, code string) {
	t.Helper()
	p, err := events.NewProducer(kafkatest.Client(t, events.ProducerOpts(nil)...), s, r.topics)
	if err != nil {
		t.Fatal(err)
	}
	e, err := events.New("//argosy.dev/spoke/"+as, events.TypeQueryAnswered,
		events.Subject{Cluster: as, Kind: schemas.SubjectApplications, Namespace: q.Namespace, Name: q.Name}.String(), as,
		schemas.QueryAnswered{Resource: schemas.Resource{Cluster: as, Namespace: q.Namespace, Name: q.Name}, RequestID: q.RequestID,
			Query: q.Query, Code: code, Answer: json.RawMessage(body)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Publish(t.Context(), e); err != nil {
		t.Fatal(err)
	}
}

// TestLiveStreamAsksNoCluster: the dashboard's live resources page asks
// the cluster once when it is viewed, as the viewer; its live stream,
// which renders a page every second, asks nothing.
func TestLiveStreamAsksNoCluster(t *testing.T) {
	dash, err := web.New(readtest.Fleet(), web.WithClock(readtest.Now))
	if err != nil {
		t.Fatal(err)
	}
	r, url, signers := liveRig(t, hub.WithDashboard(dash))
	questions := r.questions(t)
	session, _ := login(t, url, r.tokens["root"])
	type page struct {
		status int
		body   string
	}
	got := make(chan page, 1)
	go func() {
		resp, body := do(t, pageRequest(t, url, "/apps/argocd/web/tree?cluster=a", session))
		got <- page{resp.StatusCode, body}
	}()
	q := <-questions
	if q.Cluster != "a" || q.Query != schemas.QueryTree || q.RequestedBy != "root" {
		t.Fatalf("question %+v, want a tree of a's web asked by root", q)
	}
	r.answer(t, signers["a"], "a", q, `{"nodes":[{"kind":"ConfigMap","name":"settings","namespace":"web","uid":"u1"}]}`, "")
	if p := <-got; p.status != http.StatusOK || !strings.Contains(p.body, `data-name="settings"`) {
		t.Fatalf("tree page %d:\n%s", p.status, p.body)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 3500*time.Millisecond)
	defer cancel()
	req := pageRequest(t, url, "/live?path="+neturl.QueryEscape("/apps/argocd/web/tree?cluster=a"), session).WithContext(ctx)
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
	select {
	case q := <-questions:
		t.Errorf("the live stream asked %+v", q)
	default:
	}
}

// questions reads the hub's questions from the queries topic, from its
// end now on.
func (r *rig) questions(t *testing.T) <-chan *schemas.QueryRequested {
	t.Helper()
	cl := kafkatest.Client(t, kgo.ConsumeTopics(r.topics[events.TopicQueries]), kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()))
	dec, err := events.NewDecoder(events.NewVerifier(events.NewRegistry(events.HubAnchor("hub", r.signer.Public()))), events.WithTopics(r.topics))
	if err != nil {
		t.Fatal(err)
	}
	pctx, pcancel := context.WithTimeout(t.Context(), 2*time.Second)
	cl.PollFetches(pctx) // positions the consumer at the end
	pcancel()
	out := make(chan *schemas.QueryRequested, 8)
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	go func() {
		for ctx.Err() == nil {
			cl.PollFetches(ctx).EachRecord(func(rec *kgo.Record) {
				d, err := dec.Decode(ctx, rec)
				if err != nil {
					t.Errorf("a question does not decode: %v", err)
					return
				}
				out <- d.Data.(*schemas.QueryRequested)
			})
		}
	}()
	return out
}
