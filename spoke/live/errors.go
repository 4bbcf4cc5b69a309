package live

import "errors"

var (
	// ErrAppNotFound is the answer about an Application that the Argo CD
	// namespace does not hold.
	ErrAppNotFound = errors.New("application not found")
	// ErrNotInApp is the answer about a resource that is not a node of the
	// Application's tree: nothing is read of it.
	ErrNotInApp = errors.New("resource not part of the application")
	// ErrTooLarge is the answer when an Application's tree has more nodes
	// than the Source's bound (WithMaxNodes).
	ErrTooLarge = errors.New("too large")
)
