package argocd

import (
	"context"
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Transient reports whether retrying what failed with err may succeed: the
// API server was busy, timed out or failed inside, a write conflicted with
// another writer, a credential needs renewing, or the server could not be
// reached. Everything the server answered with a verdict on the request
// itself is not: the object is invalid, it or its namespace does not
// exist, the caller may not do it, a PermanentError or a ConflictError.
func Transient(err error) bool {
	var perm *PermanentError
	var conflict *ConflictError
	switch {
	case err == nil, errors.As(err, &perm), errors.As(err, &conflict), errors.Is(err, context.Canceled):
		return false
	case apierrors.IsServerTimeout(err), apierrors.IsTimeout(err), apierrors.IsTooManyRequests(err),
		apierrors.IsInternalError(err), apierrors.IsServiceUnavailable(err), apierrors.IsUnexpectedServerError(err),
		apierrors.IsConflict(err), apierrors.IsUnauthorized(err):
		return true
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return false // any other verdict of the server: not found, forbidden, invalid, …
	}
	return true // not an answer of the server: it could not be reached
}
