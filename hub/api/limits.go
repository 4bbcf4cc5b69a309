package api

// The hub's limits on what a caller may send, in one place. docs/hub.md
// lists each with the answer a request past it gets; the read API, the CLI
// and the dashboard hold to the same numbers when they show what the hub
// stored.
const (
	// MaxBodyBytes bounds a request body: a longer one is answered 413
	// without being read further.
	MaxBodyBytes = 2 << 20
	// MaxDepth bounds the nesting of any JSON or YAML value a request
	// carries, manifests and Helm values included, counted from the
	// document's root (a scalar at the top is depth 0, each object or
	// array one level more). Deeper input is answered 400 naming the
	// field where it went past the limit.
	MaxDepth = 100
	// MaxValues bounds how many keys and values (scalars, objects and
	// arrays alike) one manifest holds: reading a value costs the hub far
	// more than its bytes, so a 2 MiB body of a hundred thousand short
	// keys would cost hundreds of megabytes to refuse. A larger manifest
	// is answered 400; Helm values that large belong in a values file in
	// the repository.
	MaxValues = 50000
	// MaxAnnotationsBytes bounds the total size of an object's annotations
	// (keys and values), as Kubernetes' own apiserver does.
	MaxAnnotationsBytes = 256 << 10
	// MaxEventBytes bounds the event one change of an object makes on the
	// log (the events package's limit on one event on the wire, of which
	// the hub keeps 2 KiB for what it adds as it signs): a manifest whose
	// event would be larger is answered 413 saying its size and the limit,
	// before anything is written.
	MaxEventBytes = 512 << 10
	// MaxReasonBytes bounds a deregistration's reason (?reason=), which
	// the deregistration event and the keys' revocations carry.
	MaxReasonBytes = 1 << 10
)
