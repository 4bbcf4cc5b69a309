package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"time"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/hub/auth"
	"github.com/argosyproj/argosy/projector/read"
	"github.com/argosyproj/argosy/schemas"
)

// tree, diff, manifest and logs ask an Application's cluster a live question
// and answer with what it answered (docs/hub.md, "Live questions").
func (s *Server) tree(r *http.Request, c *call) (any, error) {
	return s.inspect(r, c, schemas.QueryTree)
}

func (s *Server) diff(r *http.Request, c *call) (any, error) {
	return s.inspect(r, c, schemas.QueryDiff)
}

func (s *Server) manifest(r *http.Request, c *call) (any, error) {
	return s.inspect(r, c, schemas.QueryManifest)
}

func (s *Server) logs(r *http.Request, c *call) (any, error) {
	return s.inspect(r, c, schemas.QueryLogs)
}

func (s *Server) inspect(r *http.Request, c *call, query string) (any, error) {
	subj := events.Subject{Cluster: r.PathValue("cluster"), Kind: schemas.SubjectApplications, Namespace: r.PathValue("namespace"), Name: r.PathValue("name")}
	timeout, err := queryTimeout(r)
	if err != nil {
		return nil, err
	}
	req, err := questionOf(r, query)
	if err != nil {
		return nil, err
	}
	a, err := s.ask(r.Context(), c.p, subj, req, timeout)
	if err != nil {
		return nil, err
	}
	return api.LiveAnswer{Cluster: subj.Cluster, Namespace: subj.Namespace, Name: subj.Name, Query: query, RequestID: a.RequestID,
		Truncated: a.Truncated, Answer: a.Answer}, nil
}

// ask asks the cluster of the Application subj names req, as p, and
// waits for the answer for at most timeout: p must be let inspect the
// Application (logs: read its logs) on its cluster and in its project.
func (s *Server) ask(ctx context.Context, p *auth.Principal, subj events.Subject, req schemas.QueryRequested, timeout time.Duration) (*schemas.QueryAnswered, error) {
	// The role first, which says nothing of the target. A question is a
	// read, so what lies outside the token's clusters or projects does not
	// exist for it, as in the read API: the same 404, word for word.
	if err := p.Allow(actionOf(req.Query), "", nil, ""); err != nil {
		return nil, err
	}
	cl, err := s.cluster(subj.Cluster, "cluster")
	if err != nil {
		return nil, err
	}
	if !p.Cluster(subj.Cluster, cl.labels) {
		return nil, notRegistered(subj.Cluster, "cluster")
	}
	cur, ok := s.ledger.get(events.DesiredKey(subj))
	if !ok || cur.deleted || !p.Project(cur.project) {
		return nil, &apiError{status: http.StatusNotFound, body: api.Error{Error: fmt.Sprintf("%s does not exist", subj),
			Hint: "argosy app list shows the Applications the hub has"}}
	}
	// The role, the cluster's labels and the project are what Allow
	// checks: all three are checked above.
	req.Resource = schemas.Resource{Cluster: subj.Cluster, Namespace: subj.Namespace, Name: subj.Name}
	req.RequestID, req.RequestedBy = newRequestID(), p.Actor
	req.ExpiresAt = s.o.now().Add(timeout).UTC()
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	a, err := s.querier.ask(actx, req, s.partitionOf(subj.Cluster))
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		return nil, &apiError{status: http.StatusGatewayTimeout, body: api.Error{
			Error: fmt.Sprintf("cluster %s did not answer within %s: %s", subj.Cluster, timeout, s.clusterState(ctx, p, subj.Cluster)),
			Hint:  "a cluster answers only while its agent runs and reads the log; argosy fleet shows its state"}}
	}
	if err != nil {
		return nil, err
	}
	if a.Code != "" {
		return nil, refusal(a)
	}
	return a, nil
}

// askLive is the dashboard's: the Application's tree or diff, asked as p.
func (s *Server) askLive(p *auth.Principal) func(ctx context.Context, query, cluster, namespace, name string) (json.RawMessage, error) {
	return func(ctx context.Context, query, cluster, namespace, name string) (json.RawMessage, error) {
		if query != schemas.QueryTree && query != schemas.QueryDiff {
			return nil, fmt.Errorf("the dashboard asks no %q question", query)
		}
		subj := events.Subject{Cluster: cluster, Kind: schemas.SubjectApplications, Namespace: namespace, Name: name}
		if _, err := events.ParseSubject(subj.String()); err != nil {
			return nil, err
		}
		a, err := s.ask(ctx, p, subj, schemas.QueryRequested{Query: query}, DefaultQueryTimeout)
		if err != nil {
			return nil, err
		}
		return a.Answer, nil
	}
}

// The bounds of a logs question: lines, and seconds back (a year).
const (
	maxTailLines    = 100_000
	maxSinceSeconds = 365 * 24 * 3600
)

// questionOf reads a manifest or logs question's target from the query.
func questionOf(r *http.Request, query string) (schemas.QueryRequested, error) {
	q := r.URL.Query()
	req := schemas.QueryRequested{Query: query}
	switch query {
	case schemas.QueryManifest:
		req.Target = &schemas.ResourceRef{Group: q.Get("group"), Version: q.Get("version"), Kind: q.Get("kind"),
			Namespace: q.Get("resourceNamespace"), Name: q.Get("resourceName")}
		for field, v := range map[string]string{"version": req.Target.Version, "kind": req.Target.Kind, "resourceName": req.Target.Name} {
			if v == "" {
				return req, invalid(field, "required: the resource whose manifest is asked for, as the tree names it")
			}
		}
	case schemas.QueryLogs:
		req.Target = &schemas.ResourceRef{Version: "v1", Kind: "Pod", Namespace: q.Get("resourceNamespace"), Name: q.Get("resourceName")}
		if req.Target.Name == "" {
			return req, invalid("resourceName", "required: the Pod whose logs are asked for, as the tree names it")
		}
		req.Container = q.Get("container")
		for field, to := range map[string]*int64{"tailLines": &req.TailLines, "sinceSeconds": &req.SinceSeconds} {
			limit := map[string]int64{"tailLines": maxTailLines, "sinceSeconds": maxSinceSeconds}[field]
			if v := q.Get(field); v != "" {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil || n < 0 || n > limit {
					return req, invalid(field, fmt.Sprintf("%q: want a whole number from 0 to %d", clip(v, maxEchoedValue), limit))
				}
				*to = n
			}
		}
		if v := q.Get("timestamps"); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return req, invalid("timestamps", fmt.Sprintf("%q: want true or false", clip(v, maxEchoedValue)))
			}
			req.Timestamps = b
		}
	}
	return req, nil
}

// refusal is the call's error for an answer that says why there is none.
func refusal(a *schemas.QueryAnswered) error {
	status := map[string]int{
		schemas.QueryNotFound:  http.StatusNotFound,
		schemas.QueryNotInTree: http.StatusForbidden,
		schemas.QueryTooLarge:  http.StatusUnprocessableEntity,
		schemas.QueryInvalid:   http.StatusBadRequest,
	}[a.Code]
	if status == 0 {
		status = http.StatusBadGateway
	}
	return &apiError{status: status, body: api.Error{Error: fmt.Sprintf("cluster %s answered %s: %s", a.Cluster, a.Code, a.Error)}}
}

// clusterState says what the fleet view knows of a cluster, for a
// question it did not answer: its state and the age of its last
// heartbeat, as the read API gives them to the caller.
func (s *Server) clusterState(ctx context.Context, p *auth.Principal, cluster string) string {
	if s.o.read == nil {
		return "the hub serves no fleet view to tell why"
	}
	req := httptest.NewRequestWithContext(read.WithScope(ctx, p), http.MethodGet, "/api/v1/clusters/"+url.PathEscape(cluster), nil)
	rec := httptest.NewRecorder()
	s.o.read.ServeHTTP(rec, req)
	var cl read.Cluster
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &cl) != nil {
		return fmt.Sprintf("the fleet view does not know its state (%d)", rec.Code)
	}
	msg := "its state is " + cl.State
	if cl.HeartbeatAgeSeconds != nil {
		msg += fmt.Sprintf(", last heartbeat %s ago", (time.Duration(*cl.HeartbeatAgeSeconds) * time.Second).String())
	} else {
		msg += ", no heartbeat yet"
	}
	return msg
}
