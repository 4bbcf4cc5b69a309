package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/propagation"
)

// Client calls /api/v1 (schemas/openapi.yaml): the hub's own API, and
// the read API, which the hub mounts and the projector serves.
type Client struct {
	base  *url.URL
	hc    *http.Client
	token string
}

// NewClient returns a client of the server at base, an http or https URL
// such as http://127.0.0.1:8080 (a path prefix is kept), sending token as
// a bearer token when it is not empty. A nil hc is http.DefaultClient.
func NewClient(base, token string, hc *http.Client) (*Client, error) {
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
	return &Client{base: u, hc: hc, token: token}, nil
}

// BaseURL returns the server's URL.
func (c *Client) BaseURL() string { return c.base.String() }

// WriteOptions are the options of every write.
type WriteOptions struct {
	// DryRun checks the write and answers with what it would append.
	DryRun bool
	// IdempotencyKey names the write, so that a retry writes nothing
	// twice.
	IdempotencyKey string
	// IfMatch is the generation a single object must be at.
	IfMatch *int64
	// ActAs makes the call for a Kubernetes user, as a token with actFor
	// grants relays it (HeaderActAsUser).
	ActAs *ActAs
}

// ActAs is a user a call is made for: its name and groups, as the
// Kubernetes API authenticated them, or as an Argo CD API server's
// session names them (Source "argocd").
type ActAs struct {
	Source string
	User   string
	Groups []string
}

// ResponseError is an error answer: its status and its Error, the one
// error body of both servers (the read API's own set only Error.Error).
type ResponseError struct {
	Status int
	Body   Error
	// read is set for the answer to a read API call, which the hub or the
	// projector may have given.
	read bool
}

// ErrNotFound is matched by a ResponseError with status 404.
var ErrNotFound = errors.New("not found")

// Is makes errors.Is(err, ErrNotFound) hold for 404s.
func (e *ResponseError) Is(target error) bool {
	return target == ErrNotFound && e.Status == http.StatusNotFound
}

func (e *ResponseError) Error() string {
	if e.read {
		return fmt.Sprintf("server answered %d %s: %s", e.Status, http.StatusText(e.Status), e.Body.Error)
	}
	msg := fmt.Sprintf("the hub answered %d: %s", e.Status, e.Body.Error)
	for _, f := range e.Body.Fields {
		msg += "\n  " + f.Field + ": " + f.Reason
	}
	if e.Body.Hint != "" {
		msg += "\n  next: " + e.Body.Hint
	}
	return msg
}

// StatusOf returns the HTTP status of a ResponseError in err, or 0.
func StatusOf(err error) int {
	var re *ResponseError
	if errors.As(err, &re) {
		return re.Status
	}
	return 0
}

// Whoami returns who the client's token speaks for.
func (c *Client) Whoami(ctx context.Context) (*Identity, error) {
	var out Identity
	return &out, c.do(ctx, http.MethodGet, "/api/v1/whoami", nil, nil, WriteOptions{}, &out)
}

// Objects lists the hub's latest word on each object, filtered by cluster
// and kind ("" for any).
func (c *Client) Objects(ctx context.Context, cluster, kind string) ([]Object, error) {
	q := url.Values{}
	if cluster != "" {
		q.Set("cluster", cluster)
	}
	if kind != "" {
		q.Set("kind", kind)
	}
	var out ObjectList
	return out.Items, c.do(ctx, http.MethodGet, "/api/v1/objects", q, nil, WriteOptions{}, &out)
}

// RegisterCluster registers a cluster, or changes its registration.
func (c *Client) RegisterCluster(ctx context.Context, name string, req ClusterRequest, o WriteOptions) (*Result, error) {
	return c.write(ctx, http.MethodPut, "/api/v1/clusters/"+url.PathEscape(name), nil, req, o)
}

// Join proves a cluster's join token and registers its public keys; it
// needs no bearer token (the join token is the credential).
func (c *Client) Join(ctx context.Context, cluster string, req JoinRequest) (*Result, error) {
	return c.write(ctx, http.MethodPost, "/api/v1/clusters/"+url.PathEscape(cluster)+"/join", nil, req, WriteOptions{})
}

// DeregisterCluster ends a cluster's registration and revokes its keys.
func (c *Client) DeregisterCluster(ctx context.Context, name, reason string, o WriteOptions) (*Result, error) {
	q := url.Values{}
	if reason != "" {
		q.Set("reason", reason)
	}
	return c.write(ctx, http.MethodDelete, "/api/v1/clusters/"+url.PathEscape(name), q, nil, o)
}

// Apply applies an Application ("applications") or AppProject
// ("appprojects") manifest to clusters.
func (c *Client) Apply(ctx context.Context, kind string, req ApplyRequest, o WriteOptions) (*Result, error) {
	return c.write(ctx, http.MethodPost, "/api/v1/"+kind, nil, req, o)
}

// Delete deletes an object (kind applications, appprojects or
// repositories) of a cluster. cascade applies to Applications.
func (c *Client) Delete(ctx context.Context, kind, cluster, namespace, name string, cascade bool, o WriteOptions) (*Result, error) {
	q := url.Values{}
	if kind == KindApplications {
		q.Set("cascade", strconv.FormatBool(cascade))
	}
	return c.write(ctx, http.MethodDelete, objectPath(kind, cluster, namespace, name), q, nil, o)
}

// Operate asks a cluster to run an operation on an Application.
func (c *Client) Operate(ctx context.Context, cluster, namespace, name string, req OperationRequest, o WriteOptions) (*Result, error) {
	return c.write(ctx, http.MethodPost, objectPath(KindApplications, cluster, namespace, name)+"/operations", nil, req, o)
}

// LiveTarget names the resource a manifest or logs question is about.
type LiveTarget struct {
	Group, Version, Kind, Namespace, Name string
}

// LogOptions narrow a logs question.
type LogOptions struct {
	Container    string
	TailLines    int64
	SinceSeconds int64
	// Timestamps begins each line with the time its container wrote it
	// (RFC 3339 with nanoseconds) and a space.
	Timestamps bool
	// ActAs asks for a user, as a token with actFor grants relays it: the
	// user's grants decide, and the audit names the user.
	ActAs *ActAs
}

// Tree asks a cluster for an Application's live resource tree; timeout
// (0: the hub's default) bounds the wait.
func (c *Client) Tree(ctx context.Context, cluster, namespace, name string, timeout time.Duration) (*LiveAnswer, error) {
	return c.live(ctx, cluster, namespace, name, "tree", timeoutQuery(timeout), nil)
}

// Diff asks a cluster for an Application's managed resources against
// what its Argo CD last applied (schemas.ApplicationDiff).
func (c *Client) Diff(ctx context.Context, cluster, namespace, name string, timeout time.Duration) (*LiveAnswer, error) {
	return c.live(ctx, cluster, namespace, name, "diff", timeoutQuery(timeout), nil)
}

// Manifest asks a cluster for the live object of one resource of an
// Application.
func (c *Client) Manifest(ctx context.Context, cluster, namespace, name string, t LiveTarget, timeout time.Duration) (*LiveAnswer, error) {
	q := timeoutQuery(timeout)
	for k, v := range map[string]string{"group": t.Group, "version": t.Version, "kind": t.Kind, "resourceNamespace": t.Namespace, "resourceName": t.Name} {
		if v != "" {
			q.Set(k, v)
		}
	}
	return c.live(ctx, cluster, namespace, name, "manifest", q, nil)
}

// Logs asks a cluster for a Pod's recent log lines; the Pod must be
// part of the Application.
func (c *Client) Logs(ctx context.Context, cluster, namespace, name, podNamespace, pod string, o LogOptions, timeout time.Duration) (*LiveAnswer, error) {
	q := timeoutQuery(timeout)
	q.Set("resourceName", pod)
	if podNamespace != "" {
		q.Set("resourceNamespace", podNamespace)
	}
	if o.Container != "" {
		q.Set("container", o.Container)
	}
	if o.TailLines > 0 {
		q.Set("tailLines", strconv.FormatInt(o.TailLines, 10))
	}
	if o.SinceSeconds > 0 {
		q.Set("sinceSeconds", strconv.FormatInt(o.SinceSeconds, 10))
	}
	if o.Timestamps {
		q.Set("timestamps", "true")
	}
	return c.live(ctx, cluster, namespace, name, "logs", q, o.ActAs)
}

func (c *Client) live(ctx context.Context, cluster, namespace, name, what string, q url.Values, actAs *ActAs) (*LiveAnswer, error) {
	var out LiveAnswer
	return &out, c.do(ctx, http.MethodGet, objectPath(KindApplications, cluster, namespace, name)+"/"+what, q, nil, WriteOptions{ActAs: actAs}, &out)
}

func timeoutQuery(d time.Duration) url.Values {
	q := url.Values{}
	if d > 0 {
		q.Set("timeout", strconv.FormatInt(int64((d+time.Second-1)/time.Second), 10))
	}
	return q
}

// PutRepository adds or changes a repository of a cluster.
func (c *Client) PutRepository(ctx context.Context, cluster, namespace, name string, req RepositoryRequest, o WriteOptions) (*Result, error) {
	return c.write(ctx, http.MethodPut, objectPath(KindRepositories, cluster, namespace, name), nil, req, o)
}

// ApplyPlacement places an Application on every cluster the request's
// selector matches, now and later.
func (c *Client) ApplyPlacement(ctx context.Context, req PlacementRequest, o WriteOptions) (*Result, error) {
	return c.write(ctx, http.MethodPost, "/api/v1/placements", nil, req, o)
}

// DeletePlacement deletes a placement; its Applications go by its prune
// policy.
func (c *Client) DeletePlacement(ctx context.Context, namespace, name string, o WriteOptions) (*Result, error) {
	return c.write(ctx, http.MethodDelete, "/api/v1/placements/"+url.PathEscape(namespace)+"/"+url.PathEscape(name), nil, nil, o)
}

// Placements lists the placements and their state on each cluster.
func (c *Client) Placements(ctx context.Context) ([]Placement, error) {
	var out PlacementList
	return out.Items, c.do(ctx, http.MethodGet, "/api/v1/placements", nil, nil, WriteOptions{}, &out)
}

// PlacementStates lists the placements with their clusters counted by
// state (Placement.States), not listed one by one.
func (c *Client) PlacementStates(ctx context.Context) ([]Placement, error) {
	var out PlacementList
	return out.Items, c.do(ctx, http.MethodGet, "/api/v1/placements", url.Values{"clusters": {"false"}}, nil, WriteOptions{}, &out)
}

func objectPath(kind, cluster, namespace, name string) string {
	return "/api/v1/clusters/" + url.PathEscape(cluster) + "/" + kind + "/" + url.PathEscape(namespace) + "/" + url.PathEscape(name)
}

func (c *Client) write(ctx context.Context, method, path string, q url.Values, body any, o WriteOptions) (*Result, error) {
	if o.DryRun {
		if q == nil {
			q = url.Values{}
		}
		q.Set("dryRun", "true")
	}
	var out Result
	if err := c.do(ctx, method, path, q, body, o, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func (c *Client) do(ctx context.Context, method, path string, q url.Values, body any, o WriteOptions, out any) error {
	u := c.base.JoinPath(path)
	u.RawQuery = q.Encode()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	// The hub continues the caller's trace, when there is one.
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(req.Header))
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if o.IdempotencyKey != "" {
		req.Header.Set(HeaderIdempotencyKey, o.IdempotencyKey)
	}
	if o.IfMatch != nil {
		req.Header.Set(HeaderIfMatch, `"`+strconv.FormatInt(*o.IfMatch, 10)+`"`)
	}
	if o.ActAs != nil {
		req.Header.Set(HeaderActAsUser, o.ActAs.User)
		if o.ActAs.Source != "" {
			req.Header.Set(HeaderActAsSource, o.ActAs.Source)
		}
		for _, g := range o.ActAs.Groups {
			req.Header.Add(HeaderActAsGroup, g)
		}
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return c.callError(ctx, method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("reading the hub's answer: %w", err)
	}
	if resp.StatusCode >= 300 {
		re := &ResponseError{Status: resp.StatusCode}
		if json.Unmarshal(b, &re.Body) != nil || re.Body.Error == "" {
			re.Body.Error = strings.TrimSpace(string(b))
		}
		return re
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("the hub's answer to %s %s is not what this client understands: %w", method, path, err)
	}
	return nil
}

// callError is the error of a call that got no answer: one that timed
// out (the http.Client's Timeout, or ctx's deadline) says which hub did
// not answer within how long and what to check, rather than leave the
// caller to guess.
func (c *Client) callError(ctx context.Context, method, path string, err error) error {
	var ue *url.Error
	if !errors.As(err, &ue) || !ue.Timeout() {
		return fmt.Errorf("calling the hub at %s: %w", c.base, err)
	}
	within := ""
	if c.hc.Timeout > 0 {
		within = " within " + c.hc.Timeout.String()
	} else if d, ok := ctx.Deadline(); ok {
		within = " by " + d.Format(time.TimeOnly)
	}
	return &TimeoutError{msg: fmt.Sprintf("the hub at %s did not answer %s %s%s: check that the hub runs and that this is its "+
		"address (its /readyz, and its log for why it does not answer; under argosy dev, that argosy-dev still runs)", c.base, method, path, within), err: err}
}

// TimeoutError is a call the hub did not answer in time.
type TimeoutError struct {
	msg string
	err error
}

func (e *TimeoutError) Error() string { return e.msg }
func (e *TimeoutError) Unwrap() error { return e.err }
