package deploy_test

import (
	"testing"

	"github.com/argosyproj/argosy/deploy"
	"github.com/argosyproj/argosy/events"
)

// TestNamesDistinctPerPrefix holds the promise of deploy.Names: installs
// whose topic prefixes differ (and so whose topics differ) share a Kafka
// without sharing a KafkaUser, whose name is also its client
// certificate's Secret and the principal its ACLs are for.
func TestNamesDistinctPerPrefix(t *testing.T) {
	prefixes := []string{"prod.", "prod-", "prod_", "Prod."}
	seen := map[string]string{}
	for _, p := range prefixes {
		n := deploy.NamesFor(p)
		if err := n.Validate(); err != nil {
			continue // a prefix refused cannot collide
		}
		for _, user := range []string{n.HubUser, n.ProjectorUser, n.ReaderUser, n.SpokeUser("east")} {
			if other, ok := seen[user]; ok {
				t.Errorf("prefixes %q and %q (topics %s and %s) both name KafkaUser %s",
					other, p, events.DefaultTopics(other)[events.TopicConfig], events.DefaultTopics(p)[events.TopicConfig], user)
			}
			seen[user] = p
		}
	}
}
