package live

import "k8s.io/apimachinery/pkg/api/meta"

// Option configures a Source.
type Option func(*options)

type options struct {
	maxNodes    int
	maxLogBytes int
	tailLines   int64
	mapper      meta.RESTMapper
}

func newOptions(opts []Option) options {
	o := options{maxNodes: DefaultMaxNodes, maxLogBytes: DefaultMaxLogBytes, tailLines: DefaultTailLines}
	for _, f := range opts {
		f(&o)
	}
	return o
}

// Defaults of the bounds.
const (
	// DefaultMaxNodes bounds a tree: a bigger one is ErrTooLarge.
	DefaultMaxNodes = 2000
	// DefaultMaxLogBytes bounds the log lines of one answer; the newest
	// lines are kept.
	DefaultMaxLogBytes = 256 << 10
	// DefaultTailLines is how many lines a log request asks for when it
	// names no number.
	DefaultTailLines = 1000
)

// WithMaxNodes bounds the nodes of a tree (default DefaultMaxNodes): a tree
// with more is ErrTooLarge, and so is every question about its
// Application.
func WithMaxNodes(n int) Option { return func(o *options) { o.maxNodes = n } }

// WithMaxLogBytes bounds the bytes of log lines one answer holds (default
// DefaultMaxLogBytes); past it the oldest lines are dropped and the answer
// says Truncated.
func WithMaxLogBytes(n int) Option { return func(o *options) { o.maxLogBytes = n } }

// WithTailLines sets how many lines a log request that names none asks
// for (default DefaultTailLines).
func WithTailLines(n int64) Option { return func(o *options) { o.tailLines = n } }

// WithMapper maps a resource's kind to the resource the API serves it as,
// for Manifest. Without one, the lowercase plural of the kind is used
// (meta.UnsafeGuessKindToResource), right for the built-in kinds and for
// custom resources named the usual way.
func WithMapper(m meta.RESTMapper) Option { return func(o *options) { o.mapper = m } }
