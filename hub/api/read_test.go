package api_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/projector/read"
	"github.com/argosyproj/argosy/projector/read/readtest"
	"github.com/argosyproj/argosy/projector/report"
)

// newHandler is the read API over q, seen at readtest.Now.
func newHandler(q projector.Query) http.Handler {
	return read.New(q, read.WithClock(readtest.Now))
}

func TestNewClient(t *testing.T) {
	tests := []struct {
		base    string
		wantErr string
	}{
		{"http://127.0.0.1:8080", ""},
		{"https://argosy.example.com/", ""},
		{"http://127.0.0.1:8080/prefix/", ""},
		{"127.0.0.1:8080", "want http://HOST:PORT"},
		{"ftp://host", "want http://HOST:PORT"},
		{"http://", "want http://HOST:PORT"},
		{"http://host/?x=1", "want no query"},
		{"http://[::1", "missing ']'"},
	}
	for _, tc := range tests {
		t.Run(tc.base, func(t *testing.T) {
			_, err := api.NewClient(tc.base, "", nil)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("error %v, want %q", err, tc.wantErr)
			}
		})
	}
}

// newServer serves readtest.Fleet on 127.0.0.1, under prefix.
func newServer(t *testing.T, prefix string) *api.Client {
	t.Helper()
	h := newHandler(readtest.Fleet())
	if prefix != "" {
		h = http.StripPrefix(prefix, h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c, err := api.NewClient(srv.URL+prefix, "", srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestClient(t *testing.T) {
	for _, prefix := range []string{"", "/argosy"} {
		t.Run("prefix="+prefix, func(t *testing.T) {
			c := newServer(t, prefix)
			ctx := t.Context()
			clusters, err := c.Clusters(ctx)
			if err != nil || len(clusters) != 3 || !clusters[0].Connected {
				t.Errorf("Clusters: %+v, %v", clusters, err)
			}
			cl, err := c.Cluster(ctx, "prod-us")
			if err != nil || cl.Name != "prod-us" || cl.Connected {
				t.Errorf("Cluster: %+v, %v", cl, err)
			}
			apps, err := c.Apps(ctx, projector.AppFilter{Cluster: "prod-eu", Name: "billing"})
			if err != nil || len(apps) != 1 || apps[0].Observed.Rejected == nil {
				t.Errorf("Apps: %+v, %v", apps, err)
			}
			apps, err = c.Apps(ctx, projector.AppFilter{Name: "guestbook"})
			if err != nil || len(apps) != 2 {
				t.Errorf("Apps across clusters: %+v, %v", apps, err)
			}
			audit, err := c.Audit(ctx, projector.AuditFilter{Actor: "alice", From: readtest.Now().Add(-3 * time.Hour), Limit: 5})
			if err != nil || len(audit) != 1 || audit[0].EventID != "ev-guestbook" {
				t.Errorf("Audit: %+v, %v", audit, err)
			}
			v, err := c.VerifyAudit(ctx)
			if err != nil || !v.OK || len(v.Partitions) != 3 {
				t.Errorf("VerifyAudit: %+v, %v", v, err)
			}
			chain, err := c.AuditChain(ctx, &read.ChainPosition{Partition: projector.Partition{Topic: "argosy.config", Partition: 1}}, 0)
			if err != nil || len(chain) != 1 || chain[0].EventID != "ev-guestbook-us" {
				t.Errorf("AuditChain: %+v, %v", chain, err)
			}
			ds, err := c.Deployments(ctx, projector.DeploymentFilter{Cluster: "prod-eu", Project: "payments"})
			if err != nil || len(ds.Items) != 2 || len(ds.Gaps) != 0 {
				t.Errorf("Deployments: %+v, %v", ds, err)
			}
			r, err := c.DeploymentReport(ctx, read.ReportParams{By: report.ByLabel, Label: "team", Bucket: report.Week})
			if err != nil || r.By != "label" || r.Label != "team" || len(r.Rows) == 0 {
				t.Errorf("DeploymentReport: %+v, %v", r, err)
			}
		})
	}
}

// TestAuditChainPages reads every chain a page at a time, each page after
// the last entry of the one before, and checks that the entries are the
// stored ones, each once, and that each partition's chain holds.
func TestAuditChainPages(t *testing.T) {
	c := newServer(t, "")
	want, err := c.AuditChain(t.Context(), nil, 0)
	if err != nil || len(want) != 5 {
		t.Fatalf("AuditChain in one page: %d entries, %v", len(want), err)
	}
	for limit := 1; limit <= 6; limit++ {
		var got []projector.AuditEntry
		var after *read.ChainPosition
		for {
			page, err := c.AuditChain(t.Context(), after, limit)
			if err != nil {
				t.Fatalf("limit %d: %v", limit, err)
			}
			got = append(got, page...)
			if len(page) < limit {
				break
			}
			pos := read.PositionOf(page[len(page)-1])
			after = &pos
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("limit %d: entries (-one page +paged):\n%s", limit, diff)
		}
	}
	byPartition := map[projector.Partition][]projector.AuditEntry{}
	for _, e := range want {
		p := read.PositionOf(e).Partition
		byPartition[p] = append(byPartition[p], e)
	}
	for p, es := range byPartition {
		if b := projector.Verify(es); b != nil {
			t.Errorf("%v: %+v", p, b)
		}
	}
}

func TestClientErrors(t *testing.T) {
	c := newServer(t, "")
	ctx := t.Context()
	_, err := c.Cluster(ctx, "no/such cluster")
	var ae *api.ResponseError
	if !errors.Is(err, api.ErrNotFound) || !errors.As(err, &ae) || ae.Body.Error != `cluster "no/such cluster" not found` {
		t.Errorf("Cluster: %v", err)
	}
	if _, err := c.Apps(ctx, projector.AppFilter{Cluster: "nope"}); !errors.Is(err, api.ErrNotFound) {
		t.Errorf("Apps of an unknown cluster: %v", err)
	}
	_, err = c.Audit(ctx, projector.AuditFilter{Limit: 5000})
	if !errors.As(err, &ae) || ae.Status != 400 || errors.Is(err, api.ErrNotFound) ||
		err.Error() != `server answered 400 Bad Request: parameter "limit": "5000" is not an integer from 1 to 1000` {
		t.Errorf("Audit: %v", err)
	}

	// Not a read API server.
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1/clusters" {
			w.Header().Set("Content-Type", "text/html")
			_, err := w.Write([]byte("<html>hello</html>"))
			if err != nil {
				t.Error(err)
			}
			return
		}
		http.Error(w, "gateway says no", http.StatusBadGateway)
	}))
	defer other.Close()
	oc, err := api.NewClient(other.URL, "", other.Client())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := oc.Clusters(ctx); err == nil || !strings.Contains(err.Error(), `answered "text/html", not JSON`) {
		t.Errorf("Clusters from an HTML server: %v", err)
	}
	if _, err := oc.VerifyAudit(ctx); !errors.As(err, &ae) || ae.Status != 502 || ae.Body.Error != "gateway says no" {
		t.Errorf("VerifyAudit from a gateway: %v", err)
	}
	other.Close()
	if _, err := oc.Clusters(ctx); err == nil || !strings.HasPrefix(err.Error(), "read API: ") {
		t.Errorf("Clusters from a closed server: %v", err)
	}
}

// TestClientToken checks that a client made with a token sends it as a
// bearer token with every read, that one without sends no Authorization,
// and that a 401 reaches the caller as a ResponseError with the server's
// message.
func TestClientToken(t *testing.T) {
	const token = "s3cr3t"
	h := newHandler(readtest.Fleet())
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := r.Header.Get("Authorization")
		seen = append(seen, got)
		if got != "Bearer "+token {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			if _, err := w.Write([]byte(`{"error":"invalid or missing bearer token"}`)); err != nil {
				t.Error(err)
			}
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	tests := []struct {
		name   string
		token  string
		header string
		status int
	}{
		{"token", token, "Bearer " + token, 0},
		{"empty token", "", "", http.StatusUnauthorized},
		{"wrong token", "nope", "Bearer nope", http.StatusUnauthorized},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			seen = nil
			c, err := api.NewClient(srv.URL, tc.token, srv.Client())
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Clusters(t.Context())
			_, err2 := c.Cluster(t.Context(), "prod-eu")
			if len(seen) != 2 || seen[0] != tc.header || seen[1] != tc.header {
				t.Errorf("Authorization headers %q, want %q twice", seen, tc.header)
			}
			var ae *api.ResponseError
			switch {
			case tc.status == 0 && (err != nil || err2 != nil):
				t.Errorf("errors %v, %v", err, err2)
			case tc.status != 0 && (!errors.As(err, &ae) || ae.Status != tc.status || ae.Body.Error != "invalid or missing bearer token"):
				t.Errorf("error %v, want a %d ResponseError with the server's message", err, tc.status)
			}
		})
	}
}
