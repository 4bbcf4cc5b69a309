package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"time"

	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/projector/read"
	"github.com/argosyproj/argosy/schemas"
)

// tree, manifest and logs ask an Application's cluster a live question
// and answer with what it answered (docs/hub.md, "Live questions").
func (s *Server) tree(r *http.Request, c *call) (any, error) {
	return s.inspect(r, c, schemas.QueryTree)
}

func (s *Server) manifest(r *http.Request, c *call) (any, error) {
	return s.inspect(r, c, schemas.QueryManifest)
}

func (s *Server) logs(r *http.Request, c *call) (any, error) {
	return s.inspect(r, c, schemas.QueryLogs)
}

func (s *Server) inspect(r *http.Request, c *call, query string) (any, error) {
	subj, cur, err := s.object(r, c, schemas.SubjectApplications)
	if err != nil {
		return nil, err
	}
	cl, _ := s.ledger.get(subj.Cluster)
	if err := c.p.Allow(actionOf(query), subj.Cluster, cl.labels, cur.project); err != nil {
		return nil, err
	}
	timeout, err := queryTimeout(r)
	if err != nil {
		return nil, err
	}
	req, err := questionOf(r, query)
	if err != nil {
		return nil, err
	}
	req.Resource = schemas.Resource{Cluster: subj.Cluster, Namespace: subj.Namespace, Name: subj.Name}
	req.RequestID, req.RequestedBy = newRequestID(), c.p.Actor
	req.ExpiresAt = s.o.now().Add(timeout).UTC()
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	a, err := s.querier.ask(ctx, req, s.partitionOf(subj.Cluster))
	if errors.Is(err, context.DeadlineExceeded) && r.Context().Err() == nil {
		return nil, &apiError{status: http.StatusGatewayTimeout, body: api.Error{
			Error: fmt.Sprintf("cluster %s did not answer within %s: %s", subj.Cluster, timeout, s.clusterState(r, c, subj.Cluster)),
			Hint:  "a cluster answers only while its agent runs and reads the log; argosy fleet shows its state"}}
	}
	if err != nil {
		return nil, err
	}
	if a.Code != "" {
		return nil, refusal(a)
	}
	return api.LiveAnswer{Cluster: subj.Cluster, Namespace: subj.Namespace, Name: subj.Name, Query: query, RequestID: a.RequestID,
		Truncated: a.Truncated, Answer: a.Answer}, nil
}

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
			if v := q.Get(field); v != "" {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil || n < 0 {
					return req, invalid(field, fmt.Sprintf("%q: want a whole number ≥ 0", clip(v, maxEchoedValue)))
				}
				*to = n
			}
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
func (s *Server) clusterState(r *http.Request, c *call, cluster string) string {
	if s.o.read == nil {
		return "the hub serves no fleet view to tell why"
	}
	req := httptest.NewRequestWithContext(read.WithScope(r.Context(), c.p), http.MethodGet, "/api/v1/clusters/"+cluster, nil)
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
