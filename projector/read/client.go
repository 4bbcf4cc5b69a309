package read

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/projector/report"
)

// Client calls a read API server.
type Client struct {
	base  *url.URL
	hc    *http.Client
	token string
}

// ClientOption configures a Client.
type ClientOption func(*Client)

// WithToken makes the client send token as a bearer token
// (Authorization: Bearer token) with every request, as a server that
// authenticates its callers (the hub) wants. An empty token sends none.
func WithToken(token string) ClientOption {
	return func(c *Client) { c.token = token }
}

// NewClient returns a client of the server at base, an http or https URL
// such as http://127.0.0.1:8080. hc may be nil for http.DefaultClient.
func NewClient(base string, hc *http.Client, opts ...ClientOption) (*Client, error) {
	u, err := url.Parse(base)
	if err != nil {
		return nil, fmt.Errorf("server URL %q: want http://HOST:PORT or https://HOST:PORT: %w", base, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("server URL %q: want http://HOST:PORT or https://HOST:PORT", base)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("server URL %q: want no query or fragment", base)
	}
	u.Path, u.RawPath = strings.TrimSuffix(u.Path, "/"), ""
	if hc == nil {
		hc = http.DefaultClient
	}
	c := &Client{base: u, hc: hc}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// APIError is an error response of the server.
type APIError struct {
	// Status is the HTTP status code.
	Status int
	// Message is the server's error message.
	Message string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("server answered %d %s: %s", e.Status, http.StatusText(e.Status), e.Message)
}

// ErrNotFound is matched by an APIError with status 404.
var ErrNotFound = errors.New("not found")

// Is makes errors.Is(err, ErrNotFound) hold for 404s.
func (e *APIError) Is(target error) bool {
	return target == ErrNotFound && e.Status == http.StatusNotFound
}

// Clusters lists the clusters.
func (c *Client) Clusters(ctx context.Context) ([]Cluster, error) {
	var l List[Cluster]
	return l.Items, c.get(ctx, "/api/v1/clusters", nil, &l)
}

// Cluster returns one cluster; the error matches ErrNotFound when there is
// no such cluster.
func (c *Client) Cluster(ctx context.Context, name string) (*Cluster, error) {
	var cl Cluster
	if err := c.get(ctx, "/api/v1/clusters/"+url.PathEscape(name), nil, &cl); err != nil {
		return nil, err
	}
	return &cl, nil
}

// Apps lists the Applications that match f. With f.Cluster set it asks the
// cluster's own endpoint, which answers 404 for an unknown cluster.
func (c *Client) Apps(ctx context.Context, f projector.AppFilter) ([]App, error) {
	q := values("namespace", f.Namespace, "name", f.Name)
	path := "/api/v1/applications"
	if f.Cluster != "" {
		path = "/api/v1/clusters/" + url.PathEscape(f.Cluster) + "/applications"
	}
	var l List[App]
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
	var l List[projector.AuditRow]
	return l.Items, c.get(ctx, "/api/v1/audit", q, &l)
}

// VerifyAudit has the server check every audit chain.
func (c *Client) VerifyAudit(ctx context.Context) (*Verification, error) {
	var v Verification
	if err := c.get(ctx, "/api/v1/audit/verify", nil, &v); err != nil {
		return nil, err
	}
	return &v, nil
}

// AuditChain returns up to limit audit entries as stored, in topic,
// partition and offset order, after the position after (nil for the
// first). A zero limit takes the server's default, 1000; a page shorter
// than the limit is the last.
func (c *Client) AuditChain(ctx context.Context, after *ChainPosition, limit int) ([]projector.AuditEntry, error) {
	q := url.Values{}
	if after != nil {
		q.Set("after", after.String())
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var l List[projector.AuditEntry]
	return l.Items, c.get(ctx, "/api/v1/audit/chain", q, &l)
}

// Deployments lists the deployment records that match f, and the gaps of
// the same clusters.
func (c *Client) Deployments(ctx context.Context, f projector.DeploymentFilter) (*DeploymentList, error) {
	q := values("cluster", f.Cluster, "project", f.Project, "namespace", f.Namespace, "app", f.Name,
		"from", timeParam(f.From), "to", timeParam(f.To))
	var l DeploymentList
	if err := c.get(ctx, "/api/v1/deployments", q, &l); err != nil {
		return nil, err
	}
	return &l, nil
}

// DeploymentReport asks for a deployment report. Zero times take the
// server's defaults.
func (c *Client) DeploymentReport(ctx context.Context, p ReportParams) (*report.Report, error) {
	q := values("by", string(p.By), "label", p.Label, "bucket", string(p.Bucket), "from", timeParam(p.From), "to", timeParam(p.To))
	var r report.Report
	if err := c.get(ctx, "/api/v1/reports/deployments", q, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// Rollouts asks for the rollouts of placement changes. Zero times take
// the server's defaults.
func (c *Client) Rollouts(ctx context.Context, p RolloutParams) (*RolloutReport, error) {
	placement := ""
	if p.Placement != "" {
		placement = p.Namespace + "/" + p.Placement
	}
	q := values("placement", placement, "from", timeParam(p.From), "to", timeParam(p.To))
	var r RolloutReport
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

// maxErrorBody bounds how much of an error response is read.
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

// responseError turns an error response into an APIError, with the server's
// message when the body is the API's JSON error.
func responseError(resp *http.Response) error {
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	if err != nil {
		return fmt.Errorf("read API: reading a %d answer: %w", resp.StatusCode, err)
	}
	var body errorBody
	if json.Unmarshal(b, &body) != nil || body.Error == "" {
		body.Error = strings.TrimSpace(string(b))
		if body.Error == "" {
			body.Error = "(no message)"
		}
	}
	return &APIError{Status: resp.StatusCode, Message: body.Error}
}
