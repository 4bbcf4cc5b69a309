package apicmd_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"

	"github.com/argosyproj/argosy/cmd/argosy/internal/apicmd"
	"github.com/argosyproj/argosy/cmd/argosy/internal/cmdtest"
	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/hub/api"
)

// prodHub starts a hub with the cluster prod registered.
func prodHub(t *testing.T) *cmdtest.Hub {
	t.Helper()
	h := cmdtest.StartHub(t)
	h.Register(map[string]string{"env": "prod"}, "prod")
	return h
}

// session returns a session of the hub h as an admin, resending without
// waiting.
func session(t *testing.T, h *cmdtest.Hub, o apicmd.WriteFlags) *apicmd.Session {
	t.Helper()
	cmdtest.Isolate(t)
	o.API = apicmd.Options{Server: h.URL, Token: h.Admin}
	o.SetBackoff([]time.Duration{0, 0})
	s, err := o.Session()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// hangUp closes the connection of a request without an answer, after the
// hub read it: the client sees a transport error.
func hangUp(t *testing.T, w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		t.Error(err)
		return
	}
	conn.Close()
}

func deregister(s *apicmd.Session, cluster string) func(context.Context, api.WriteOptions) (*api.Result, error) {
	return func(ctx context.Context, o api.WriteOptions) (*api.Result, error) {
		return s.Client.DeregisterCluster(ctx, cluster, "", o)
	}
}

// TestWriteResendsWithTheSameKey checks that a write that meets a
// transport error or a 503 is sent again with the same idempotency key,
// at most twice, and what it says when it never gets through; and that a
// write that got through after resends was written once. Each case
// deregisters a cluster of its own, with a key of its own (KEY), on one
// hub.
func TestWriteResendsWithTheSameKey(t *testing.T) {
	tests := []struct {
		name    string
		fail    func(t *testing.T, w http.ResponseWriter, n int) bool
		gen     *int64 // the generation the write expects
		sent    int
		wantErr string
	}{
		{name: "answered", fail: func(*testing.T, http.ResponseWriter, int) bool { return false }, sent: 1},
		{name: "hang-up once", fail: func(t *testing.T, w http.ResponseWriter, n int) bool {
			if n == 1 {
				hangUp(t, w)
			}
			return n == 1
		}, sent: 2},
		{name: "503 twice", fail: func(t *testing.T, w http.ResponseWriter, n int) bool {
			if n <= 2 {
				answer503(t, w)
			}
			return n <= 2
		}, sent: 3},
		{name: "503 always", fail: func(t *testing.T, w http.ResponseWriter, _ int) bool { answer503(t, w); return true }, sent: 3,
			wantErr: "the hub failed (503 Service Unavailable): another replica is writing; nothing was written, retry\n" +
				"  sent 3 times with Idempotency-Key KEY; running the command again with --idempotency-key KEY writes nothing twice"},
		{name: "hang-up always", fail: func(t *testing.T, w http.ResponseWriter, _ int) bool { hangUp(t, w); return true }, sent: 3,
			wantErr: "sent 3 times with Idempotency-Key KEY; running the command again with --idempotency-key KEY writes nothing twice"},
		{name: "409 is not resent", fail: func(*testing.T, http.ResponseWriter, int) bool { return false }, gen: ptr(int64(2)),
			sent: 1, wantErr: "the hub refused the request (409 Conflict): cluster CLUSTER is at generation 1, not 2: it changed since you read it\n" +
				"  next: read its generation again (argosy app list, argosy cluster list), then retry"},
	}
	h := cmdtest.StartHub(t)
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cluster, key := fmt.Sprintf("c%d", i), fmt.Sprintf("k%d", i)
			h.Register(nil, cluster)
			before := len(h.Requests())
			h.Fail(func(w http.ResponseWriter, _ *http.Request, n int) bool { return tc.fail(t, w, n-before) })
			defer h.Fail(nil)
			s := session(t, h, apicmd.WriteFlags{IdempotencyKey: key})
			_, err := s.Write(t.Context(), tc.gen, deregister(s, cluster))
			if want := strings.NewReplacer("KEY", key, "CLUSTER", cluster).Replace(tc.wantErr); want != "" {
				if err == nil || !strings.HasSuffix(err.Error(), want) {
					t.Fatalf("error\n%v\nwant it to end\n%s", err, want)
				}
			} else if err != nil {
				t.Fatal(err)
			} else if o := object(t, h, cluster); !o.Deleted || o.Generation != 2 {
				t.Errorf("the hub holds %+v: want it deregistered once, at generation 2", o)
			}
			reqs := h.Requests()[before:]
			if len(reqs) != tc.sent {
				t.Fatalf("%d requests, want %d", len(reqs), tc.sent)
			}
			for _, r := range reqs {
				if k := r.Header.Get(api.HeaderIdempotencyKey); k != key {
					t.Errorf("Idempotency-Key %q, want %s on every resend", k, key)
				}
			}
		})
	}
}

// object returns the cluster the hub holds.
func object(t *testing.T, h *cmdtest.Hub, cluster string) api.Object {
	t.Helper()
	for _, o := range h.Objects() {
		if o.Kind == api.KindClusters && o.Name == cluster {
			return o
		}
	}
	t.Fatalf("the hub holds no cluster %s", cluster)
	return api.Object{}
}

func ptr[T any](v T) *T { return &v }

func answer503(t *testing.T, w http.ResponseWriter) {
	cmdtest.Answer(t, w, http.StatusServiceUnavailable, api.Error{Error: "another replica is writing; nothing was written, retry"})
}

// TestWriteKeys checks that each write of an invocation has a key of its
// own, random unless given, and that a dry run and If-Match are sent.
func TestWriteKeys(t *testing.T) {
	h := prodHub(t)
	s := session(t, h, apicmd.WriteFlags{DryRun: true})
	gen := int64(1)
	for range 3 {
		if _, err := s.Write(t.Context(), &gen, deregister(s, "prod")); err != nil {
			t.Fatal(err)
		}
	}
	reqs := h.Requests()
	first := reqs[0].Header.Get(api.HeaderIdempotencyKey)
	if len(first) < 20 {
		t.Errorf("random key %q: want at least 20 characters", first)
	}
	want := []string{first, first + "-2", first + "-3"}
	for i, r := range reqs {
		if got := r.Header.Get(api.HeaderIdempotencyKey); got != want[i] {
			t.Errorf("request %d: key %q, want %q", i+1, got, want[i])
		}
		if r.Query != "dryRun=true" || r.Header.Get(api.HeaderIfMatch) != `"1"` {
			t.Errorf("request %d: query %q, If-Match %q", i+1, r.Query, r.Header.Get(api.HeaderIfMatch))
		}
	}
	if other := session(t, h, apicmd.WriteFlags{}); other.Key() == s.Key() {
		t.Error("two invocations drew the same key")
	}
}

// TestExplainHubAnswers checks how the hub's answers read: fields a line each,
// the hint, one field that the message already names once, and 401 and
// 403 through Options.Explain.
func TestExplainHubAnswers(t *testing.T) {
	tests := []struct {
		status int
		body   api.Error
		want   string
	}{
		{http.StatusBadRequest, api.Error{Error: "manifest: invalid", Fields: []api.FieldError{{Field: "manifest.spec.project", Reason: "required"},
			{Field: "manifest.spec.destination", Reason: "name a server or a name"}}, Hint: "argosy app apply -f app.yaml --dry-run"},
			"the hub refused the request (400 Bad Request): manifest: invalid\n  manifest.spec.project: required\n" +
				"  manifest.spec.destination: name a server or a name\n  next: argosy app apply -f app.yaml --dry-run"},
		{http.StatusBadRequest, api.Error{Error: "url: required", Fields: []api.FieldError{{Field: "url", Reason: "required"}}},
			"the hub refused the request (400 Bad Request): url: required"},
		{http.StatusNotFound, api.Error{Error: `cluster "x" is not registered`, Fields: []api.FieldError{{Field: "cluster", Reason: "no such cluster"}},
			Hint: "argosy cluster register x --labels …, or argosy cluster list"},
			"the hub refused the request (404 Not Found): cluster \"x\" is not registered\n  cluster: no such cluster\n  next: argosy cluster register x --labels …, or argosy cluster list"},
		{http.StatusInternalServerError, api.Error{Error: "internal error: boom"}, "the hub failed (500 Internal Server Error): internal error: boom"},
		{http.StatusForbidden, api.Error{Error: "denied"}, "the hub at http://hub:1 refused the request (403 Forbidden): denied; the token from --token is good but may not do this: " +
			"ask the hub's administrator for a role that may, or log in with another token: argosy login http://hub:1 --token TOKEN"},
	}
	for _, tc := range tests {
		t.Run(tc.want[:30], func(t *testing.T) {
			cmdtest.Isolate(t)
			o := &apicmd.Options{Server: "http://hub:1", Token: "t"}
			if _, err := o.Client(); err != nil {
				t.Fatal(err)
			}
			in := &api.ResponseError{Status: tc.status, Body: tc.body}
			err := apicmd.Explain(o, in)
			if err.Error() != tc.want {
				t.Errorf("got\n%s\nwant\n%s", err, tc.want)
			}
			if !errors.Is(err, in) {
				t.Error("the error does not unwrap to the hub's")
			}
		})
	}
	other := errors.New("other")
	if err := apicmd.Explain(&apicmd.Options{}, other); err != other { //nolint:errorlint // the very error
		t.Errorf("Explain(other) = %v", err)
	}
}

// TestPrintResult checks the table of a write, a dry run's and a
// replayed one's note, and JSON.
func TestPrintResult(t *testing.T) {
	off := int64(42)
	written := &api.Result{Events: []api.Written{{ID: "e1", Type: "io.argosy.config.cluster.registered.v1", Cluster: "prod", Kind: api.KindClusters,
		Name: "prod", Generation: 2, Partition: 3, Offset: &off}}}
	dry := &api.Result{DryRun: true, Events: []api.Written{{Type: "io.argosy.config.application.upserted.v1", Cluster: "prod", Kind: api.KindApplications,
		Namespace: "argocd", Name: "guestbook", Generation: 1}}}
	replayed := *written
	replayed.Replayed = true
	tests := []struct {
		name           string
		res            *api.Result
		format         string
		stdout, stderr string
	}{
		{"written", written, "table", "TYPE                CLUSTER  KIND      NAMESPACE  NAME  GENERATION  OFFSET\n" +
			"cluster.registered  prod     clusters  -          prod  2           3@42\n", ""},
		{"dry run", dry, "table", "TYPE                  CLUSTER  KIND          NAMESPACE  NAME       GENERATION  OFFSET\n" +
			"application.upserted  prod     applications  argocd     guestbook  1           dry run\n", "Dry run: the hub wrote nothing.\n"},
		{"replayed", &replayed, "table", "TYPE                CLUSTER  KIND      NAMESPACE  NAME  GENERATION  OFFSET\n" +
			"cluster.registered  prod     clusters  -          prod  2           3@42\n",
			"Already written by an earlier request with the same idempotency key: nothing was written again.\n"},
		{"dry run json", dry, "json", `{
  "events": [
    {
      "id": "",
      "type": "io.argosy.config.application.upserted.v1",
      "cluster": "prod",
      "kind": "applications",
      "namespace": "argocd",
      "name": "guestbook",
      "generation": 1,
      "partition": 0
    }
  ],
  "dryRun": true
}
`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			if err := apicmd.PrintResult(cmdkit.IOStreams{Out: &out, Err: &errOut}, tc.format, tc.res); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.stdout, out.String()); diff != "" {
				t.Errorf("stdout (-want +got):\n%s", diff)
			}
			if errOut.String() != tc.stderr {
				t.Errorf("stderr %q, want %q", errOut.String(), tc.stderr)
			}
		})
	}
	if got := apicmd.Merge([]*api.Result{written, &replayed}); len(got.Events) != 2 || got.Replayed || got.DryRun {
		t.Errorf("Merge = %+v", got)
	}
}

// TestComplete checks completion of the hub's objects: names of a kind,
// of a cluster when one is set, by prefix, and nothing, quietly, when the
// hub cannot be reached or refuses the token.
func TestComplete(t *testing.T) {
	h := prodHub(t)
	h.Register(nil, "dev", "gone")
	if _, err := h.Client.DeregisterCluster(t.Context(), "gone", "", api.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.Apply(api.KindApplications, cmdtest.AppManifest("guestbook", "default"), "prod", "dev")
	h.Apply(api.KindApplications, cmdtest.AppManifest("billing", "default"), "dev")
	cmdtest.Isolate(t)
	cluster := ""
	tests := []struct {
		server, token, kind, cluster, prefix string
		want                                 []string
	}{
		{h.URL, h.Viewer, api.KindClusters, "", "", []string{"dev", "prod"}},
		{h.URL, h.Viewer, api.KindApplications, "", "", []string{"billing", "guestbook"}},
		{h.URL, h.Viewer, api.KindApplications, "prod", "", []string{"guestbook"}},
		{h.URL, h.Viewer, api.KindApplications, "", "g", []string{"guestbook"}},
		{h.URL, "nope", api.KindClusters, "", "", nil},
		{"http://127.0.0.1:1", h.Viewer, api.KindClusters, "", "", nil},
	}
	for _, tc := range tests {
		o := &apicmd.Options{Server: tc.server, Token: tc.token}
		cluster = tc.cluster
		got, dir := apicmd.Complete(o, tc.kind, &cluster)(&cobra.Command{}, nil, tc.prefix)
		if !cmp.Equal(got, tc.want) || dir != cobra.ShellCompDirectiveNoFileComp {
			t.Errorf("%s %s of %q from %q: %v, %v; want %v", tc.server, tc.kind, tc.cluster, tc.prefix, got, dir, tc.want)
		}
	}
	if got, _ := apicmd.CompleteFirst(&apicmd.Options{Server: h.URL, Token: h.Viewer}, api.KindClusters, nil)(&cobra.Command{}, []string{"prod"}, ""); got != nil {
		t.Errorf("second argument completed to %v", got)
	}
}
