//go:build integration

package root

import (
	"path/filepath"
	"testing"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/argosyproj/argosy/cmd/argosy/internal/cmdtest"
	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/hub"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
	"github.com/argosyproj/argosy/projector/read"
	"github.com/argosyproj/argosy/projector/read/readtest"
	"github.com/argosyproj/argosy/projector/sqlstore"
	"github.com/argosyproj/argosy/schemas"
)

// TestHostileSpecOnTheLog appends to a real hub's config topic, signed
// with the hub's key but past its validation, the Application the hub
// accepted before it limited nesting: Helm values 9,995 levels deep. A
// real projector folds it; argosy audit and app status answer
// for it over the hub's read API, each saying the spec is too deep to
// show, where before they failed to decode the answer.
func TestHostileSpecOnTheLog(t *testing.T) {
	cmdtest.Isolate(t)
	store, err := sqlstore.OpenSQLite(t.Context(), filepath.Join(t.TempDir(), "views.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := store.Close(); err != nil {
			t.Error(err)
		}
	})
	h := startHub(t, hub.WithReadAPI(read.New(store)), hub.WithAuditReads(false))
	h.fold(t, store)
	h.login(t)

	p, err := events.NewProducer(kafkatest.Client(t, events.ProducerOpts(nil)...), h.signer, h.topics)
	if err != nil {
		t.Fatal(err)
	}
	subj := events.Subject{Cluster: "c1", Kind: schemas.SubjectApplications, Namespace: "argocd", Name: "deep"}
	e, err := events.New("//argosy.dev/hub", events.TypeApplicationUpserted, subj.String(), "c1",
		schemas.ApplicationUpserted{Resource: schemas.Resource{Cluster: "c1", Namespace: "argocd", Name: "deep", Generation: 1},
			Project: "default", Spec: readtest.DeepSpec(readtest.DeepLevels)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Publish(t.Context(), []*event.Event{e}...); err != nil {
		t.Fatal(err)
	}
	waitFolded(t, h, store)

	const tooDeep = "too deep to show: 9998 levels"
	expect{args: []string{"audit", "--app", "deep"},
		stdout: []string{"application.upserted.v1", "applications/argocd/deep"},
		stderr: []string{"Note: the spec after the change of applications/argocd/deep at ", tooDeep}}.run(t)
	expect{args: []string{"audit", "--app", "deep", "-o", "json"}, stdout: []string{`"$omitted": {`, `"depth": 9998`}}.run(t)
	expect{args: []string{"app", "status", "deep"},
		stdout: []string{"c1       argocd     deep"},
		stderr: []string{"Note: the spec the hub wants for argocd/deep on c1 (generation 1) is " + tooDeep}}.run(t)
}
