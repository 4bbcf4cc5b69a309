//go:build integration

package cli_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
)

// TestHubNamesFollowTheTopicPrefix runs argosy-hub run --fold with a topic
// prefix and no flag naming a group or transactional id: its writes go
// through transactional ids that begin with the prefix, and its projector
// replica folds in the prefix's group, so that another install on the same
// Kafka shares neither (docs/deploy.md#two-installs-on-one-kafka).
func TestHubNamesFollowTheTopicPrefix(t *testing.T) {
	f := newFixture(t, buildHub(t))
	hubc, _, _ := f.startWith("hub", []string{"--store", "sqlite://" + filepath.Join(f.dir, "views.db"), "--fold"})
	if _, err := hubc.RegisterCluster(t.Context(), "names-1", api.ClusterRequest{}, api.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(kafkatest.Client(t))
	var ids, groups []string
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("transactional ids %v, groups %v", ids, groups)
		}
	})
	waitFor(t, time.Minute, "the hub's transactional ids and the projector's group", func() bool {
		txns, err := adm.ListTransactions(t.Context(), nil, nil)
		if err != nil {
			return false
		}
		listed, err := adm.ListGroups(t.Context())
		if err != nil {
			return false
		}
		ids, groups = txns.TransactionalIDs(), listed.Groups()
		return slices.ContainsFunc(ids, func(id string) bool { return strings.HasPrefix(id, f.prefix+"argosy-hub-config-") }) &&
			slices.Contains(groups, f.prefix+"argosy-projector")
	})
}
