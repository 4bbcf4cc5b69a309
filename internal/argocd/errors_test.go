package argocd_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/argosyproj/argosy/internal/argocd"
)

// TestTransient pins which failures of an apply may pass on a retry and
// which are the server's verdict on the request itself.
func TestTransient(t *testing.T) {
	apps := schema.GroupResource{Group: "argoproj.io", Resource: "applications"}
	wrap := func(err error) error { return fmt.Errorf("apply Application argocd/x: %w", err) }
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"not found", wrap(apierrors.NewNotFound(apps, "x")), false},
		{"namespace not found", wrap(apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "nowhere")), false},
		{"forbidden", wrap(apierrors.NewForbidden(apps, "x", errors.New("no"))), false},
		{"invalid", wrap(apierrors.NewInvalid(schema.GroupKind{Group: "argoproj.io", Kind: "Application"}, "x", field.ErrorList{})), false},
		{"bad request", wrap(apierrors.NewBadRequest("no")), false},
		{"permanent", &argocd.PermanentError{Err: errors.New("no history entry 9")}, false},
		{"conflict with a local owner", &argocd.ConflictError{Err: errors.New("local")}, false},
		{"stopping", wrap(context.Canceled), false},
		{"server timeout", wrap(apierrors.NewServerTimeout(apps, "patch", 1)), true},
		{"too many requests", wrap(apierrors.NewTooManyRequests("busy", 1)), true},
		{"internal error", wrap(apierrors.NewInternalError(errors.New("etcd"))), true},
		{"unavailable", wrap(apierrors.NewServiceUnavailable("starting")), true},
		{"write conflict", wrap(apierrors.NewConflict(apps, "x", errors.New("modified"))), true},
		{"unauthorized", wrap(apierrors.NewUnauthorized("token expired")), true},
		{"unreachable", wrap(&net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}), true},
		{"a call timed out", wrap(context.DeadlineExceeded), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := argocd.Transient(tc.err); got != tc.want {
				t.Errorf("Transient(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}
