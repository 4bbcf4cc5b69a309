package read_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/projector/read"
	"github.com/argosyproj/argosy/projector/read/readtest"
	"github.com/argosyproj/argosy/projector/report"
	"github.com/argosyproj/argosy/schemas"
)

// newHandler serves q seen at readtest.Now.
func newHandler(q projector.Query, opts ...read.Option) http.Handler {
	return read.New(q, append([]read.Option{read.WithClock(readtest.Now)}, opts...)...)
}

// get serves one request and returns the response.
func get(t *testing.T, h http.Handler, method, target string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequestWithContext(t.Context(), method, target, http.NoBody))
	return rec
}

func decode[T any](t *testing.T, body []byte) T {
	t.Helper()
	var v T
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decoding %T: %v\n%s", v, err, body)
	}
	return v
}

func at(d time.Duration) string {
	return url.QueryEscape(readtest.Now().Add(d).Format(time.RFC3339))
}

func clusterNames(t *testing.T, b []byte) []string {
	var names []string
	for _, c := range decode[read.List[read.Cluster]](t, b).Items {
		names = append(names, fmt.Sprintf("%s connected=%v", c.Name, c.Connected))
	}
	return names
}

// fleetNames is a filtered fleet listing: its totals, then each cluster
// and its state.
func fleetNames(t *testing.T, b []byte) []string {
	p := decode[read.FleetPage](t, b)
	out := []string{fmt.Sprintf("total %d, page %d of %d, %v", p.Total, p.Page, p.Pages, p.Counts)}
	for _, c := range p.Items {
		out = append(out, c.Name+" "+c.State)
	}
	return out
}

func appNames(t *testing.T, b []byte) []string {
	names := []string{}
	for _, a := range decode[read.List[read.App]](t, b).Items {
		names = append(names, a.Cluster+"/"+a.Namespace+"/"+a.Name)
	}
	return names
}

func auditIDs(t *testing.T, b []byte) []string {
	ids := []string{}
	for _, a := range decode[read.List[projector.AuditRow]](t, b).Items {
		ids = append(ids, a.EventID)
	}
	return ids
}

// chainPositions lists a chain page's entries by position, with the actor
// each carries: as stored, so only API calls have one.
func chainPositions(t *testing.T, b []byte) []string {
	out := []string{}
	for _, e := range decode[read.List[projector.AuditEntry]](t, b).Items {
		out = append(out, read.PositionOf(e).String()+" actor="+e.Actor)
	}
	return out
}

func deploymentIDs(t *testing.T, b []byte) []string {
	l := decode[read.DeploymentList](t, b)
	ids := []string{}
	for _, d := range l.Items {
		ids = append(ids, d.Cluster+"/"+d.Name+" "+d.Phase)
	}
	return append(ids, fmt.Sprintf("gaps=%d", len(l.Gaps)))
}

func reportRows(t *testing.T, b []byte) []string {
	r := decode[report.Report](t, b)
	rows := []string{fmt.Sprintf("%s %s %s..%s gaps=%v", r.By, r.Bucket, r.From.Format(time.RFC3339), r.To.Format(time.RFC3339), r.Gaps)}
	for _, row := range r.Rows {
		s := fmt.Sprintf("%s %s ok=%d failed=%d", row.Group, row.Start.Format("2006-01-02"), row.Deployments, row.Failures)
		if row.Unchanged > 0 {
			s += fmt.Sprintf(" unchanged=%d", row.Unchanged)
		}
		if row.Degraded > 0 {
			s += fmt.Sprintf(" degraded=%d", row.Degraded)
		}
		if row.TimeToRestore != nil {
			s += " restored in " + row.TimeToRestore.Median.String()
		}
		rows = append(rows, s)
	}
	return rows
}

func rolloutRows(t *testing.T, b []byte) []string {
	r := decode[read.RolloutReport](t, b)
	var rows []string
	for _, ro := range r.Rollouts {
		s := fmt.Sprintf("%s/%s gen %d: %d of %d converged, %d failed, %d pending", ro.Namespace, ro.Placement, ro.Generation,
			ro.Converged, ro.Targeted, ro.Failed, ro.Pending)
		if ro.Done != nil {
			s += fmt.Sprintf(", done in %.0fs, spread %.0fs", *ro.DurationSeconds, ro.SpreadSeconds)
		}
		if ro.Superseded {
			s += ", superseded"
		}
		for _, c := range ro.Clusters {
			s += " " + c.Cluster
		}
		rows = append(rows, s)
	}
	return rows
}

// TestEndpoints runs every endpoint against readtest.Fleet, and checks every
// response, errors included, against its schema in openapi.yaml.
func TestEndpoints(t *testing.T) {
	tests := []struct {
		name    string
		target  string
		status  int
		errText string                            // a substring of the error message
		list    func(*testing.T, []byte) []string // what the body lists
		want    []string                          // ...which must be this
		check   func(t *testing.T, body []byte)   // or any other check
	}{
		{name: "clusters", target: "/api/v1/clusters", status: 200, list: clusterNames,
			want: []string{"prod-eu connected=true", "prod-us connected=false", "staging connected=false"}},
		{name: "clusters refuse parameters", target: "/api/v1/clusters?cluster=x", status: 400,
			errText: `unknown parameter "cluster": want one of selector, state, q, sort, page, perPage`},
		{name: "clusters by selector", target: "/api/v1/clusters?selector=env%3Dprod", status: 200, list: fleetNames,
			want: []string{"total 2, page 1 of 1, map[Connected:1 Stale:1]", "prod-eu Connected", "prod-us Stale"}},
		{name: "clusters by state", target: "/api/v1/clusters?state=Stale", status: 200, list: fleetNames,
			want: []string{"total 1, page 1 of 1, map[Connected:1 Stale:1 Unknown:1]", "prod-us Stale"}},
		{name: "clusters sorted, paged", target: "/api/v1/clusters?sort=-name&perPage=2&page=2", status: 200, list: fleetNames,
			want: []string{"total 3, page 2 of 2, map[Connected:1 Stale:1 Unknown:1]", "prod-eu Connected"}},
		{name: "clusters by name", target: "/api/v1/clusters?q=us", status: 200, list: fleetNames,
			want: []string{"total 1, page 1 of 1, map[Stale:1]", "prod-us Stale"}},
		{name: "clusters, a bad selector", target: "/api/v1/clusters?selector=env%3D%3D%3D", status: 400, errText: `selector "env==="`},
		{name: "clusters, a bad state", target: "/api/v1/clusters?state=Gone", status: 400, errText: `parameter "state": "Gone" is not one of Connected, Stale, Unknown, Deregistered`},
		{name: "clusters, a bad page size", target: "/api/v1/clusters?perPage=501", status: 400, errText: `parameter "perPage": "501" is not an integer from 1 to 500`},
		{name: "cluster", target: "/api/v1/clusters/prod-eu", status: 200, check: func(t *testing.T, b []byte) {
			c := decode[read.Cluster](t, b)
			if c.Name != "prod-eu" || !c.Connected || c.Beat == nil || c.Beat.BySync["OutOfSync"] != 1 || c.Registration.Labels["region"] != "eu" {
				t.Errorf("cluster %+v", c)
			}
		}},
		{name: "cluster not found", target: "/api/v1/clusters/nope", status: 404, errText: `cluster "nope" not found`},
		{name: "cluster with an escaped name", target: "/api/v1/clusters/a%2Fb", status: 404, errText: `cluster "a/b" not found`},
		{name: "cluster applications", target: "/api/v1/clusters/prod-eu/applications", status: 200, list: appNames,
			want: []string{"prod-eu/argocd/billing", "prod-eu/argocd/guestbook"}},
		{name: "cluster applications by name", target: "/api/v1/clusters/prod-eu/applications?name=guestbook&namespace=argocd",
			status: 200, list: appNames, want: []string{"prod-eu/argocd/guestbook"}},
		{name: "cluster applications of an unknown cluster", target: "/api/v1/clusters/nope/applications", status: 404,
			errText: `cluster "nope" not found`},
		{name: "cluster applications refuse cluster", target: "/api/v1/clusters/prod-eu/applications?cluster=prod-us",
			status: 400, errText: `unknown parameter "cluster": want one of namespace, name`},
		{name: "applications", target: "/api/v1/applications", status: 200, list: appNames,
			want: []string{"prod-eu/argocd/billing", "prod-eu/argocd/guestbook", "prod-us/argocd/guestbook"}},
		{name: "applications by cluster", target: "/api/v1/applications?cluster=prod-us", status: 200, list: appNames,
			want: []string{"prod-us/argocd/guestbook"}},
		{name: "applications by name", target: "/api/v1/applications?name=guestbook", status: 200, list: appNames,
			want: []string{"prod-eu/argocd/guestbook", "prod-us/argocd/guestbook"}},
		{name: "applications none", target: "/api/v1/applications?namespace=other", status: 200, list: appNames, want: []string{}},
		{name: "applications repeated parameter", target: "/api/v1/applications?cluster=a&cluster=b", status: 400,
			errText: `parameter "cluster" given 2 times`},
		{name: "applications misspelt parameter", target: "/api/v1/applications?clustr=prod-eu", status: 400,
			errText: `unknown parameter "clustr": want one of cluster, namespace, name`},
		{name: "audit", target: "/api/v1/audit", status: 200, list: auditIDs,
			want: []string{"ev-guestbook-us", "ev-billing-5", "ev-call-1", "ev-guestbook", "ev-reg-eu"}},
		{name: "audit by actor", target: "/api/v1/audit?actor=bob", status: 200, list: auditIDs,
			want: []string{"ev-billing-5", "ev-call-1"}},
		{name: "audit by cluster and app", target: "/api/v1/audit?cluster=prod-eu&namespace=argocd&app=guestbook",
			status: 200, list: auditIDs, want: []string{"ev-guestbook"}},
		{name: "audit from", target: "/api/v1/audit?from=" + at(-61*time.Minute), status: 200, list: auditIDs,
			want: []string{"ev-guestbook-us", "ev-billing-5", "ev-call-1"}},
		{name: "audit from to", target: "/api/v1/audit?from=" + at(-3*time.Hour) + "&to=" + at(-time.Hour), status: 200,
			list: auditIDs, want: []string{"ev-call-1", "ev-guestbook"}},
		{name: "audit limit", target: "/api/v1/audit?limit=2", status: 200, list: auditIDs,
			want: []string{"ev-guestbook-us", "ev-billing-5"}},
		{name: "audit results joined", target: "/api/v1/audit?app=billing", status: 200, check: func(t *testing.T, b []byte) {
			rows := decode[read.List[projector.AuditRow]](t, b).Items
			if len(rows) != 1 || len(rows[0].Results) != 1 || rows[0].Results[0].Code != "invalid" || rows[0].Actor != "bob" {
				t.Errorf("rows %+v", rows)
			}
		}},
		{name: "audit limit zero", target: "/api/v1/audit?limit=0", status: 400, errText: `parameter "limit": "0" is not an integer from 1 to 1000`},
		{name: "audit limit too large", target: "/api/v1/audit?limit=1001", status: 400, errText: `from 1 to 1000`},
		{name: "audit limit not a number", target: "/api/v1/audit?limit=ten", status: 400, errText: `"ten" is not an integer`},
		{name: "audit bad from", target: "/api/v1/audit?from=yesterday", status: 400,
			errText: `parameter "from": "yesterday" is not an RFC 3339 time`},
		{name: "audit bad to", target: "/api/v1/audit?to=2026-03-02", status: 400, errText: `parameter "to"`},
		{name: "audit from after to", target: "/api/v1/audit?from=" + at(0) + "&to=" + at(-time.Hour), status: 400,
			errText: `"from" (2026-03-02T12:00:00Z) must be before "to" (2026-03-02T11:00:00Z)`},
		{name: "audit changes", target: "/api/v1/audit?changes=true", status: 200, list: auditIDs,
			want: []string{"ev-guestbook-us", "ev-billing-5", "ev-guestbook", "ev-reg-eu"}},
		{name: "audit changes not a boolean", target: "/api/v1/audit?changes=yes", status: 400, errText: `parameter "changes"`},
		{name: "audit timeline", target: "/api/v1/audit/timeline?reads=true", status: 200, check: func(t *testing.T, b []byte) {
			if l := decode[read.List[read.Action]](t, b); len(l.Items) == 0 {
				t.Error("no actions")
			}
		}},
		{name: "audit timeline limit too large", target: "/api/v1/audit/timeline?limit=501", status: 400, errText: `from 1 to 500`},
		{name: "audit timeline reads not a boolean", target: "/api/v1/audit/timeline?reads=1", status: 400, errText: `parameter "reads"`},
		{name: "audit verify", target: "/api/v1/audit/verify", status: 200, check: func(t *testing.T, b []byte) {
			v := decode[read.Verification](t, b)
			var got []string
			for _, p := range v.Partitions {
				got = append(got, fmt.Sprintf("%s/%d %d head=%v", p.Topic, p.Partition, p.Entries, p.Head != ""))
			}
			want := []string{"argosy.audit/0 1 head=true", "argosy.config/0 3 head=true", "argosy.config/1 1 head=true"}
			if !v.OK || v.Broken != nil || !cmp.Equal(got, want) {
				t.Errorf("verification ok=%v broken=%v partitions %v, want %v", v.OK, v.Broken, got, want)
			}
		}},
		{name: "audit verify refuses parameters", target: "/api/v1/audit/verify?partition=0", status: 400, errText: "takes none"},
		{name: "audit chain", target: "/api/v1/audit/chain", status: 200, list: chainPositions, want: []string{
			"argosy.audit/0/0 actor=bob", "argosy.config/0/10 actor=", "argosy.config/0/11 actor=", "argosy.config/0/12 actor=",
			"argosy.config/1/4 actor="}},
		{name: "audit chain after", target: "/api/v1/audit/chain?after=argosy.config/0/10&limit=3", status: 200,
			list: chainPositions, want: []string{"argosy.config/0/11 actor=", "argosy.config/0/12 actor=", "argosy.config/1/4 actor="}},
		{name: "audit chain after a partition's end", target: "/api/v1/audit/chain?after=argosy.config/0/12", status: 200,
			list: chainPositions, want: []string{"argosy.config/1/4 actor="}},
		{name: "audit chain after an unknown partition", target: "/api/v1/audit/chain?after=argosy.b/3/7", status: 200,
			list: chainPositions, want: []string{"argosy.config/0/10 actor=", "argosy.config/0/11 actor=",
				"argosy.config/0/12 actor=", "argosy.config/1/4 actor="}},
		{name: "audit chain after the end", target: "/api/v1/audit/chain?after=argosy.config/1/4", status: 200,
			list: chainPositions, want: []string{}},
		{name: "audit chain bad after", target: "/api/v1/audit/chain?after=argosy.config/0", status: 400,
			errText: `parameter "after": "argosy.config/0" is not TOPIC/PARTITION/OFFSET`},
		{name: "audit chain negative offset", target: "/api/v1/audit/chain?after=argosy.config/0/-1", status: 400,
			errText: `parameter "after"`},
		{name: "audit chain signed partition", target: "/api/v1/audit/chain?after=argosy.config/%2B0/1", status: 400,
			errText: `parameter "after"`},
		{name: "audit chain minus zero offset", target: "/api/v1/audit/chain?after=argosy.config/0/-0", status: 400,
			errText: `parameter "after"`},
		{name: "audit chain partition of 10 digits", target: "/api/v1/audit/chain?after=argosy.config/0000000001/1", status: 400,
			errText: `parameter "after"`},
		{name: "audit chain offset of 19 digits", target: "/api/v1/audit/chain?after=argosy.config/0/0000000000000000001", status: 400,
			errText: `parameter "after"`},
		{name: "audit chain limit too large", target: "/api/v1/audit/chain?limit=1001", status: 400, errText: `from 1 to 1000`},
		{name: "audit chain refuses filters", target: "/api/v1/audit/chain?cluster=prod-eu", status: 400,
			errText: `unknown parameter "cluster": want one of after, limit`},
		{name: "deployments", target: "/api/v1/deployments", status: 200, list: deploymentIDs, want: []string{
			"prod-eu/guestbook Succeeded", "prod-eu/guestbook Succeeded", "prod-eu/billing Failed",
			"prod-us/guestbook Succeeded", "prod-eu/billing Succeeded", "prod-us/guestbook Succeeded", "gaps=1"}},
		{name: "deployments by cluster", target: "/api/v1/deployments?cluster=prod-us", status: 200, list: deploymentIDs,
			want: []string{"prod-us/guestbook Succeeded", "prod-us/guestbook Succeeded", "gaps=1"}},
		{name: "deployments by project and app", target: "/api/v1/deployments?project=payments&app=billing&namespace=argocd",
			status: 200, list: deploymentIDs, want: []string{"prod-eu/billing Failed", "prod-eu/billing Succeeded", "gaps=1"}},
		{name: "deployments from to", target: "/api/v1/deployments?cluster=prod-eu&from=" + at(-25*time.Hour) + "&to=" + at(-2*time.Hour),
			status: 200, list: deploymentIDs, want: []string{"prod-eu/billing Failed", "gaps=0"}},
		{name: "deployments bad to", target: "/api/v1/deployments?to=now", status: 400, errText: `parameter "to": "now"`},
		{name: "rollouts", target: "/api/v1/reports/rollouts", status: 200, list: rolloutRows, want: []string{
			"argocd/guestbook gen 2: 0 of 2 converged, 0 failed, 2 pending",
			// prod-eu's deployment 8 days ago, prod-us's 3 hours ago.
			"argocd/guestbook gen 1: 2 of 2 converged, 0 failed, 0 pending, done in 681000s, spread 680400s, superseded"}},
		{name: "rollouts of one placement", target: "/api/v1/reports/rollouts?placement=argocd/guestbook&from=" + at(-time.Hour),
			status: 200, list: rolloutRows, want: []string{"argocd/guestbook gen 2: 0 of 2 converged, 0 failed, 2 pending prod-eu prod-us"}},
		{name: "rollouts of a bad placement", target: "/api/v1/reports/rollouts?placement=guestbook", status: 400, errText: "want namespace/name"},
		{name: "rollouts of an empty placement", target: "/api/v1/reports/rollouts?placement=", status: 400, errText: "want namespace/name"},
		{name: "report by cluster", target: "/api/v1/reports/deployments?by=cluster", status: 200, list: reportRows, want: []string{
			"cluster day 2026-01-31T12:00:00Z..2026-03-02T12:00:00Z gaps=[{prod-us 1}]",
			"prod-eu 2026-02-22 ok=1 failed=0",
			// billing's failure recovered in 23 hours, guestbook's turn to Degraded in 1.
			"prod-eu 2026-03-01 ok=1 failed=1 degraded=1 restored in 12h0m0s",
			"prod-eu 2026-03-02 ok=1 failed=0", "prod-us 2026-03-02 ok=1 failed=0 unchanged=1"}},
		{name: "report by app by week", target: "/api/v1/reports/deployments?by=app&bucket=week&from=" + at(-48*time.Hour) +
			"&to=" + at(0), status: 200, list: reportRows, want: []string{
			"app week 2026-02-28T12:00:00Z..2026-03-02T12:00:00Z gaps=[{prod-us/argocd/guestbook 1}]",
			"prod-eu/argocd/billing 2026-02-23 ok=0 failed=1 restored in 23h0m0s", "prod-eu/argocd/billing 2026-03-02 ok=1 failed=0",
			"prod-eu/argocd/guestbook 2026-02-23 ok=1 failed=0 degraded=1 restored in 1h0m0s", "prod-us/argocd/guestbook 2026-03-02 ok=1 failed=0 unchanged=1"}},
		{name: "report by label", target: "/api/v1/reports/deployments?by=label&label=team&from=" + at(-24*time.Hour),
			status: 200, list: reportRows, want: []string{
				"label day 2026-03-01T12:00:00Z..2026-03-02T12:00:00Z gaps=[{web 1}]",
				"payments 2026-03-02 ok=1 failed=0", "web 2026-03-02 ok=1 failed=0 unchanged=1"}},
		{name: "report restored after to", target: "/api/v1/reports/deployments?by=project&from=" + at(-48*time.Hour) +
			"&to=" + at(-24*time.Hour), status: 200, list: reportRows, want: []string{
			"project day 2026-02-28T12:00:00Z..2026-03-01T12:00:00Z gaps=[{web 1}]",
			"payments 2026-03-01 ok=0 failed=1 restored in 23h0m0s", "web 2026-03-01 ok=1 failed=0"}},
		{name: "report without by", target: "/api/v1/reports/deployments", status: 400, errText: `parameter "by" is required`},
		{name: "report bad by", target: "/api/v1/reports/deployments?by=team", status: 400,
			errText: `parameter "by": "team" is not one of app, project, cluster, label`},
		{name: "report bad bucket", target: "/api/v1/reports/deployments?by=app&bucket=month", status: 400,
			errText: `parameter "bucket": "month" is not one of day, week`},
		{name: "report label without key", target: "/api/v1/reports/deployments?by=label", status: 400,
			errText: `"label" is required with by=label`},
		{name: "report key without label", target: "/api/v1/reports/deployments?by=app&label=team", status: 400,
			errText: `"label" is only taken with by=label`},
		{name: "report from after default to", target: "/api/v1/reports/deployments?by=app&from=" + at(time.Hour),
			status: 400, errText: `must be before "to"`},
	}
	v := newValidator(t)
	h := newHandler(readtest.Fleet())
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := get(t, h, http.MethodGet, tc.target)
			body := rec.Body.Bytes()
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d\n%s", rec.Code, tc.status, body)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			v.response(t, tc.target, rec.Code, body)
			if tc.errText != "" {
				if msg := decode[struct{ Error string }](t, body).Error; !strings.Contains(msg, tc.errText) {
					t.Errorf("error %q, want it to contain %q", msg, tc.errText)
				}
			}
			if tc.list != nil {
				if diff := cmp.Diff(tc.want, tc.list(t, body)); diff != "" {
					t.Errorf("listed (-want +got):\n%s", diff)
				}
			}
			if tc.check != nil {
				tc.check(t, body)
			}
		})
	}
}

func TestMethodsAndUnknownPaths(t *testing.T) {
	h := newHandler(readtest.Fleet())
	tests := []struct {
		method, target string
		status         int
		errText        string
	}{
		{http.MethodPost, "/api/v1/clusters", 405, "method POST not allowed"},
		{http.MethodDelete, "/api/v1/clusters/prod-eu", 405, "read-only"},
		{http.MethodGet, "/api/v1/nodes", 404, "no endpoint /api/v1/nodes"},
		{http.MethodGet, "/api/v1/clusters/", 404, "no endpoint"},
		{http.MethodGet, "/", 404, "no endpoint"},
		{http.MethodPut, "/api/v2/clusters", 404, "no endpoint"},
	}
	for _, tc := range tests {
		t.Run(tc.method+" "+tc.target, func(t *testing.T) {
			rec := get(t, h, tc.method, tc.target)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d\n%s", rec.Code, tc.status, rec.Body)
			}
			if msg := decode[struct{ Error string }](t, rec.Body.Bytes()).Error; !strings.Contains(msg, tc.errText) {
				t.Errorf("error %q, want it to contain %q", msg, tc.errText)
			}
			if allow := rec.Header().Get("Allow"); tc.status == 405 && allow != "GET, HEAD" {
				t.Errorf("Allow %q", allow)
			}
		})
	}
	rec := get(t, h, http.MethodHead, "/api/v1/clusters")
	if rec.Code != 200 {
		t.Errorf("HEAD: status %d", rec.Code)
	}
}

func TestOpenAPIServed(t *testing.T) {
	rec := get(t, newHandler(readtest.Fleet()), http.MethodGet, "/api/v1/openapi.yaml")
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "application/yaml" || !bytes.Equal(rec.Body.Bytes(), schemas.OpenAPI) {
		t.Errorf("status %d, Content-Type %q, %d bytes (want %d)", rec.Code, rec.Header().Get("Content-Type"),
			rec.Body.Len(), len(schemas.OpenAPI))
	}
}

// TestInternalErrors checks that a failing store answers 500 on every
// endpoint that reads it, without its message, which goes to the log.
func TestInternalErrors(t *testing.T) {
	q := readtest.Fleet()
	q.Err = errors.New("disk on fire at /var/lib/argosy/views.db")
	var logs bytes.Buffer
	h := newHandler(q, read.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	v := newValidator(t)
	for _, target := range []string{"/api/v1/clusters", "/api/v1/clusters/prod-eu", "/api/v1/clusters/prod-eu/applications",
		"/api/v1/applications", "/api/v1/audit", "/api/v1/audit/verify", "/api/v1/audit/chain",
		"/api/v1/audit/chain?after=argosy.config/0/10", "/api/v1/deployments", "/api/v1/reports/deployments?by=app"} {
		t.Run(target, func(t *testing.T) {
			logs.Reset()
			rec := get(t, h, http.MethodGet, target)
			if rec.Code != 500 {
				t.Fatalf("status %d, want 500\n%s", rec.Code, rec.Body)
			}
			v.response(t, target, rec.Code, rec.Body.Bytes())
			if strings.Contains(rec.Body.String(), "disk") || !strings.Contains(rec.Body.String(), "internal error") {
				t.Errorf("body %s", rec.Body)
			}
			if !strings.Contains(logs.String(), "disk on fire") {
				t.Errorf("the log lacks the error:\n%s", logs.String())
			}
		})
	}
}

func TestReporter(t *testing.T) {
	v := newValidator(t)
	const target = "/api/v1/reports/deployments?by=project&from=2026-03-01T00:00:00Z&to=2026-03-02T00:00:00Z"
	var gotRecs []projector.Deployment
	var gotReq report.Request
	spy := read.ReporterFunc(func(_ context.Context, recs []projector.Deployment, req report.Request) (report.Report, error) {
		gotRecs, gotReq = recs, req
		return report.Report{By: req.By, Bucket: req.Bucket, From: req.From, To: req.To}, nil
	})
	fail := func(err error) read.Reporter {
		return read.ReporterFunc(func(context.Context, []projector.Deployment, report.Request) (report.Report, error) {
			return report.Report{}, err
		})
	}
	tests := []struct {
		name     string
		reporter read.Reporter
		status   int
		body     string
	}{
		{"default", nil, 200, `"group":"payments"`},
		{"spy", spy, 200, `"rows":[]`},
		{"refuses", fail(fmt.Errorf("%w: no such label", report.ErrInvalidRequest)), 400, "invalid report request: no such label"},
		{"too many", fail(fmt.Errorf("%w: 3000000000 records", report.ErrTooMany)), 400, "ask for a shorter range"},
		{"fails", fail(errors.New("secret detail")), 500, `{"error":"internal error"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := read.New(readtest.Fleet(), read.WithClock(readtest.Now), read.WithReporter(tc.reporter))
			rec := get(t, h, http.MethodGet, target)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d\n%s", rec.Code, tc.status, rec.Body)
			}
			v.response(t, target, rec.Code, rec.Body.Bytes())
			if !strings.Contains(rec.Body.String(), tc.body) {
				t.Errorf("body %s, want %q", rec.Body, tc.body)
			}
		})
	}
	// The reporter gets the parameters, every gap, and the records from
	// From on, including those after To, which tell when failures were
	// restored.
	want := report.Request{By: report.ByProject, Bucket: report.Day, From: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC),
		To: time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC), Gaps: readtest.Fleet().GapRows, Health: readtest.Fleet().HealthRows,
		Now: readtest.Now()} // Since is zero: records finished before From
	if diff := cmp.Diff(want, gotReq, cmpopts.IgnoreFields(report.Request{}, "CommitTime")); diff != "" {
		t.Errorf("request (-want +got):\n%s", diff)
	}
	if len(gotRecs) != 5 {
		t.Errorf("%d records, want the 5 that finished from 2026-03-01 on", len(gotRecs))
	}
}

func TestConnected(t *testing.T) {
	tests := []struct {
		interval time.Duration
		want     []string
	}{
		{0, []string{"prod-eu connected=true", "prod-us connected=false", "staging connected=false"}},
		{3 * time.Second, []string{"prod-eu connected=false", "prod-us connected=false", "staging connected=false"}},
		{101 * time.Second, []string{"prod-eu connected=true", "prod-us connected=true", "staging connected=false"}},
		{100 * time.Second, []string{"prod-eu connected=true", "prod-us connected=false", "staging connected=false"}},
	}
	for _, tc := range tests {
		t.Run(tc.interval.String(), func(t *testing.T) {
			rec := get(t, newHandler(readtest.Fleet(), read.WithHeartbeatInterval(tc.interval)), http.MethodGet, "/api/v1/clusters")
			if diff := cmp.Diff(tc.want, clusterNames(t, rec.Body.Bytes())); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestCanceledRequest(t *testing.T) {
	q := readtest.Fleet()
	q.Err = context.Canceled
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	rec := httptest.NewRecorder()
	newHandler(q).ServeHTTP(rec, httptest.NewRequestWithContext(ctx, http.MethodGet, "/api/v1/clusters", http.NoBody))
	if rec.Code != http.StatusServiceUnavailable {
		t.Errorf("status %d, want 503", rec.Code)
	}
	body, err := io.ReadAll(rec.Body)
	if err != nil || !strings.Contains(string(body), "canceled") {
		t.Errorf("body %s %v", body, err)
	}
}

// TestReportOneApplication: by app, the report leads with each
// Application's total over the fleet, and app=namespace/name keeps one
// Application's records, whose totals are one per cluster.
func TestReportOneApplication(t *testing.T) {
	v := newValidator(t)
	h := read.New(readtest.Fleet(), read.WithClock(readtest.Now))
	tests := []struct {
		target string
		status int
		apps   []string // "namespace/name clusters deployments"
		totals []string // "group deployments"
		body   string
	}{
		{target: "/api/v1/reports/deployments?by=app", status: 200,
			apps:   []string{"argocd/billing 1 1", "argocd/guestbook 2 3"},
			totals: []string{"prod-eu/argocd/billing 1", "prod-eu/argocd/guestbook 2", "prod-us/argocd/guestbook 1"}},
		{target: "/api/v1/reports/deployments?by=app&app=argocd/guestbook", status: 200,
			apps:   []string{"argocd/guestbook 2 3"},
			totals: []string{"prod-eu/argocd/guestbook 2", "prod-us/argocd/guestbook 1"}, body: `"app":"argocd/guestbook"`},
		{target: "/api/v1/reports/deployments?by=cluster&app=argocd/guestbook", status: 400, body: `only taken with by=app`},
		{target: "/api/v1/reports/deployments?by=app&app=guestbook", status: 400, body: `want namespace/name`},
	}
	for _, tc := range tests {
		t.Run(tc.target, func(t *testing.T) {
			rec := get(t, h, http.MethodGet, tc.target)
			if rec.Code != tc.status || !strings.Contains(rec.Body.String(), tc.body) {
				t.Fatalf("status %d, want %d with %q\n%s", rec.Code, tc.status, tc.body, rec.Body)
			}
			v.response(t, tc.target, rec.Code, rec.Body.Bytes())
			if tc.status != 200 {
				return
			}
			r := decode[report.Report](t, rec.Body.Bytes())
			var apps, totals []string
			for _, a := range r.Applications {
				apps = append(apps, fmt.Sprintf("%s %d %d", a.Group, a.Clusters, a.Deployments))
			}
			for _, a := range r.Totals {
				totals = append(totals, fmt.Sprintf("%s %d", a.Group, a.Deployments))
			}
			if diff := cmp.Diff(tc.apps, apps); diff != "" {
				t.Errorf("applications (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.totals, totals); diff != "" {
				t.Errorf("totals (-want +got):\n%s", diff)
			}
		})
	}
}
