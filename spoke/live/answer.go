package live

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/argosyproj/argosy/schemas"
)

// Answer answers one of the hub's live questions about the Application
// q names: its tree, a manifest, its diff or a Pod's logs, as JSON. truncated says
// the logs were cut to their bound. Its errors name the question's
// refusal code (QueryCode).
func (s *Source) Answer(ctx context.Context, q *schemas.QueryRequested) (answer json.RawMessage, truncated bool, err error) {
	if q.Namespace != s.argoNS {
		return nil, false, refused(schemas.QueryNotFound, fmt.Errorf("%w: %s/%s: this agent's Applications are in %s", ErrAppNotFound, q.Namespace, q.Name, s.argoNS))
	}
	var v any
	switch q.Query {
	case schemas.QueryTree:
		v, err = s.Tree(ctx, q.Name)
	case schemas.QueryDiff:
		v, err = s.Diff(ctx, q.Name)
	case schemas.QueryManifest, schemas.QueryLogs:
		if q.Target == nil {
			return nil, false, refused(schemas.QueryInvalid, fmt.Errorf("a %s question names no resource", q.Query))
		}
		ref := Ref{Group: q.Target.Group, Version: q.Target.Version, Kind: q.Target.Kind, Namespace: q.Target.Namespace, Name: q.Target.Name}
		if q.Query == schemas.QueryManifest {
			answer, err = s.Manifest(ctx, q.Name, ref)
			return answer, false, codeOf(err)
		}
		var l *Logs
		l, err = s.Logs(ctx, q.Name, ref, LogOptions{Container: q.Container, TailLines: q.TailLines, SinceSeconds: q.SinceSeconds, Timestamps: q.Timestamps})
		if err == nil {
			v, truncated = l, l.Truncated
		}
	default:
		return nil, false, refused(schemas.QueryInvalid, fmt.Errorf("%q is not a question this agent answers: tree, manifest, diff or logs", q.Query))
	}
	if err != nil {
		return nil, false, codeOf(err)
	}
	answer, err = json.Marshal(v)
	return answer, truncated, err
}

// queryError is an error with its question's refusal code.
type queryError struct {
	code string
	err  error
}

func (e *queryError) Error() string     { return e.err.Error() }
func (e *queryError) Unwrap() error     { return e.err }
func (e *queryError) QueryCode() string { return e.code }

func refused(code string, err error) error { return &queryError{code: code, err: err} }

// codeOf gives err its refusal code: not found, not the Application's,
// too large; any other failure of the cluster's API is failed.
func codeOf(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrAppNotFound) || apierrors.IsNotFound(err):
		return refused(schemas.QueryNotFound, err)
	case errors.Is(err, ErrNotInApp):
		return refused(schemas.QueryNotInTree, err)
	case errors.Is(err, ErrTooLarge):
		return refused(schemas.QueryTooLarge, err)
	case apierrors.IsBadRequest(err) || apierrors.IsInvalid(err):
		return refused(schemas.QueryInvalid, err)
	}
	return refused(schemas.QueryFailed, err)
}
