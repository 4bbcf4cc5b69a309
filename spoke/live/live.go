package live

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/argosyproj/argosy/schemas"
)

// ApplicationGVR is Argo CD's Application resource.
var ApplicationGVR = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}

// Source answers live questions about the Applications of one Argo CD
// namespace from the cluster's API. It keeps no state between questions:
// each one reads the Application and its tree anew.
type Source struct {
	dyn    dynamic.Interface
	logs   LogReader
	argoNS string
	opts   options
}

// New returns a Source that reads the cluster with dyn, Pod logs with logs,
// and the Applications of argoNamespace.
func New(dyn dynamic.Interface, logs LogReader, argoNamespace string, opts ...Option) (*Source, error) {
	var errs []error
	if dyn == nil {
		errs = append(errs, errors.New("no dynamic client"))
	}
	if logs == nil {
		errs = append(errs, errors.New("no log reader"))
	}
	if argoNamespace == "" {
		errs = append(errs, errors.New("no Argo CD namespace"))
	}
	o := newOptions(opts)
	if o.maxNodes < 1 || o.maxLogBytes < 1 || o.tailLines < 1 {
		errs = append(errs, fmt.Errorf("bounds must be positive: %d nodes, %d log bytes, %d tail lines", o.maxNodes, o.maxLogBytes, o.tailLines))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("live source: %w", err)
	}
	return &Source{dyn: dyn, logs: logs, argoNS: argoNamespace, opts: o}, nil
}

// Ref names one resource: a node of a tree, or its parent. In a question
// Group, Kind, Namespace and Name are required; Version and UID, if set,
// must match the node's too.
type Ref = schemas.TreeRef

// matches reports whether r, a question's Ref, names the node n.
func matches(r, n Ref) bool {
	return r.Group == n.Group && r.Kind == n.Kind && r.Namespace == n.Namespace && r.Name == n.Name &&
		(r.Version == "" || r.Version == n.Version) && (r.UID == "" || r.UID == n.UID)
}

// Tree, Node, Info and Health are the wire shape of a tree answer
// (schemas.ApplicationTree): Argo CD's ApplicationTree.
type (
	Tree   = schemas.ApplicationTree
	Node   = schemas.TreeNode
	Info   = schemas.TreeInfo
	Health = schemas.TreeHealth
)

// Tree returns the resource tree of the Application app: its managed
// resources that exist, with the health Argo CD gave them, and what they
// own, found through ownerReferences. It is ErrAppNotFound if there is no
// such Application and ErrTooLarge past the Source's bound.
func (s *Source) Tree(ctx context.Context, app string) (*Tree, error) {
	nodes, err := s.tree(ctx, app)
	if err != nil {
		return nil, err
	}
	return &Tree{Nodes: nodes}, nil
}

// node finds ref in app's tree, or says ErrNotInApp.
func (s *Source) node(ctx context.Context, app string, ref Ref) (Node, error) {
	nodes, err := s.tree(ctx, app)
	if err != nil {
		return Node{}, err
	}
	for _, n := range nodes {
		if matches(ref, n.TreeRef) {
			return n, nil
		}
	}
	return Node{}, fmt.Errorf("%s in application %s: %w", ref, app, ErrNotInApp)
}

// application reads app from the Argo CD namespace.
func (s *Source) application(ctx context.Context, app string) (*unstructured.Unstructured, error) {
	a, err := s.dyn.Resource(ApplicationGVR).Namespace(s.argoNS).Get(ctx, app, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("application %s/%s: %w", s.argoNS, app, ErrAppNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read application %s/%s: %w", s.argoNS, app, err)
	}
	return a, nil
}
