package api

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/projector/read"
	"github.com/argosyproj/argosy/projector/report"
)

// The read API's calls: the projector's views, which the projector
// serves and the hub mounts (schemas/openapi.yaml, the operations tagged
// fleet, audit, deployments and meta). Either may answer them, so their
// errors say "server answered" rather than name the hub.

// Clusters lists the clusters.
func (c *Client) Clusters(ctx context.Context) ([]read.Cluster, error) {
	var l read.List[read.Cluster]
	return l.Items, c.get(ctx, "/api/v1/clusters", nil, &l)
}

// Fleet lists the clusters r keeps, in its order, with the total and the
// matches counted by state; every match on one page unless r asks for a
// page (Page or PerPage above zero).
func (c *Client) Fleet(ctx context.Context, r read.FleetRequest) (read.FleetPage, error) {
	q := values("selector", r.Selector, "state", r.State, "q", r.Search, "sort", cmp.Or(r.Sort, "name"))
	if r.Page > 0 {
		q.Set("page", strconv.Itoa(r.Page))
	}
	if r.PerPage > 0 {
		q.Set("perPage", strconv.Itoa(r.PerPage))
	}
	var p read.FleetPage
	return p, c.get(ctx, "/api/v1/clusters", q, &p)
}

// Cluster returns one cluster; the error matches ErrNotFound when there is
// no such cluster.
func (c *Client) Cluster(ctx context.Context, name string) (*read.Cluster, error) {
	var cl read.Cluster
	if err := c.get(ctx, "/api/v1/clusters/"+url.PathEscape(name), nil, &cl); err != nil {
		return nil, err
	}
	return &cl, nil
}

// Apps lists the Applications that match f. With f.Cluster set it asks the
// cluster's own endpoint, which answers 404 for an unknown cluster.
func (c *Client) Apps(ctx context.Context, f projector.AppFilter) ([]read.App, error) {
	q := values("namespace", f.Namespace, "name", f.Name)
	path := "/api/v1/applications"
	if f.Cluster != "" {
		path = "/api/v1/clusters/" + url.PathEscape(f.Cluster) + "/applications"
	}
	var l read.List[read.App]
	return l.Items, c.get(ctx, path, q, &l)
}

// Audit lists the audit entries that match f, newest first. A zero Limit
// takes the server's default.
func (c *Client) Audit(ctx context.Context, f projector.AuditFilter) ([]projector.AuditRow, error) {
	q := values("cluster", f.Cluster, "namespace", f.Namespace, "app", f.Name, "actor", f.Actor,
		"from", timeParam(f.From), "to", timeParam(f.To))
	if f.Limit > 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	if f.Changes {
		q.Set("changes", "true")
	}
	var l read.List[projector.AuditRow]
	return l.Items, c.get(ctx, "/api/v1/audit", q, &l)
}

// Timeline lists the audit timeline: one entry per action, newest first.
func (c *Client) Timeline(ctx context.Context, f read.TimelineFilter) ([]read.Action, error) {
	q := values("cluster", f.Cluster, "namespace", f.Namespace, "app", f.Name, "actor", f.Actor,
		"from", timeParam(f.From), "to", timeParam(f.To))
	if f.Limit > 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	if f.Reads {
		q.Set("reads", "true")
	}
	var l read.List[read.Action]
	return l.Items, c.get(ctx, "/api/v1/audit/timeline", q, &l)
}

// VerifyAudit has the server check every audit chain.
func (c *Client) VerifyAudit(ctx context.Context) (*read.Verification, error) {
	var v read.Verification
	if err := c.get(ctx, "/api/v1/audit/verify", nil, &v); err != nil {
		return nil, err
	}
	return &v, nil
}

// AuditChain returns up to limit audit entries as stored, in topic,
// partition and offset order, after the position after (nil for the
// first). A zero limit takes the server's default, 1000; a page shorter
// than the limit is the last.
func (c *Client) AuditChain(ctx context.Context, after *read.ChainPosition, limit int) ([]projector.AuditEntry, error) {
	q := url.Values{}
	if after != nil {
		q.Set("after", after.String())
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var l read.List[projector.AuditEntry]
	return l.Items, c.get(ctx, "/api/v1/audit/chain", q, &l)
}

// Deployments lists the deployment records that match f, and the gaps of
// the same clusters.
func (c *Client) Deployments(ctx context.Context, f projector.DeploymentFilter) (*read.DeploymentList, error) {
	q := values("cluster", f.Cluster, "project", f.Project, "namespace", f.Namespace, "app", f.Name,
		"from", timeParam(f.From), "to", timeParam(f.To))
	var l read.DeploymentList
	if err := c.get(ctx, "/api/v1/deployments", q, &l); err != nil {
		return nil, err
	}
	return &l, nil
}

// DeploymentReport asks for a deployment report. Zero times take the
// server's defaults.
func (c *Client) DeploymentReport(ctx context.Context, p read.ReportParams) (*report.Report, error) {
	q := values("by", string(p.By), "label", p.Label, "bucket", string(p.Bucket), "from", timeParam(p.From), "to", timeParam(p.To),
		"app", p.App)
	var r report.Report
	if err := c.get(ctx, "/api/v1/reports/deployments", q, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// Rollouts asks for the rollouts of placement changes. Zero times take
// the server's defaults.
func (c *Client) Rollouts(ctx context.Context, p read.RolloutParams) (*read.RolloutReport, error) {
	placement := ""
	if p.Placement != "" {
		placement = p.Namespace + "/" + p.Placement
	}
	q := values("placement", placement, "from", timeParam(p.From), "to", timeParam(p.To))
	var r read.RolloutReport
	if err := c.get(ctx, "/api/v1/reports/rollouts", q, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// values builds query parameters from name, value pairs, leaving out empty
// values.
func values(kv ...string) url.Values {
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			q.Set(kv[i], kv[i+1])
		}
	}
	return q
}

func timeParam(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Format(time.RFC3339Nano)
}

// maxErrorBody bounds how much of an error answer to a read is read.
const maxErrorBody = 64 << 10

func (c *Client) get(ctx context.Context, path string, q url.Values, out any) error {
	target := c.base.String() + path
	if len(q) > 0 {
		target += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, http.NoBody)
	if err != nil {
		return fmt.Errorf("read API request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("read API: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return responseError(resp)
	}
	if mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return fmt.Errorf("read API %s: answered %q, not JSON: is %s a read API server?", path,
			resp.Header.Get("Content-Type"), c.base.Redacted())
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("read API %s: decoding the answer: %w", path, err)
	}
	return nil
}

// responseError turns an error answer to a read into a ResponseError, with
// the server's Error when the body is one.
func responseError(resp *http.Response) error {
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	if err != nil {
		return fmt.Errorf("read API: reading a %d answer: %w", resp.StatusCode, err)
	}
	re := &ResponseError{Status: resp.StatusCode, read: true}
	if json.Unmarshal(b, &re.Body) != nil || re.Body.Error == "" {
		re.Body = Error{Error: strings.TrimSpace(string(b))}
		if re.Body.Error == "" {
			re.Body.Error = "(no message)"
		}
	}
	return re
}
