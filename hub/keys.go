package hub

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/schemas"
)

// HubKeyOwner is the owner the hub's keys have on the trust topic.
const HubKeyOwner = "hub"

// signingErr is nil while one of the keys the hub signs with may sign: a
// key whose rotation or revocation is on the trust topic signs nothing
// that readers accept from then on, so the hub writes nothing with it.
func (s *Server) signingErr() error {
	now := s.o.now()
	var why []string
	for _, id := range s.signer.KeyIDs() {
		k, ok := s.keys.Key(id)
		switch {
		case !ok:
			why = append(why, fmt.Sprintf("key %s is not known on the trust topic", id))
		case k.ValidAt(now):
			return nil
		default:
			why = append(why, fmt.Sprintf("key %s was retired at %s (%s)", id, k.Until.Format(time.RFC3339), k.Reason))
		}
	}
	return failf(http.StatusServiceUnavailable, "this hub replica signs with keys readers no longer accept: %v; "+
		"nothing was written: restart it with its successor key (argosy-hub run --hub-key NEXT.key --trust-anchor FIRST.pub)", why)
}

// publishKey puts the hub's signing key on the trust topic once the hub
// has read that topic to the time it started, unless the log names it
// already: a reader that pinned the anchor out of band finds it there,
// and an outside reader can compare the two.
func (s *Server) publishKey(ctx context.Context, started time.Time) error {
	if err := s.keys.WaitCovers(ctx, started); err != nil {
		return nil //nolint:nilerr // ctx ended: the hub is stopping
	}
	k, ok := s.keys.Key(s.signer.KeyID())
	if !ok || !k.Logged.IsZero() || !k.ValidAt(s.o.now()) {
		return nil
	}
	e, err := keyRegistered(s.signer.Public(), s.signer.KeyID())
	if err != nil {
		return err
	}
	if _, err := s.audit.Publish(ctx, e); err != nil && ctx.Err() == nil {
		s.o.Log.WarnContext(ctx, "the hub's key was not published on the trust topic; the next start tries again", "key", k.ID, "err", err)
	}
	return nil
}

func keyRegistered(pub []byte, id string) (*event.Event, error) {
	return events.New(Source, events.TypeKeyRegistered, "keys/"+id, HubKeyOwner, hubKey(pub, id))
}

func hubKey(pub []byte, id string) schemas.KeyRegistered {
	return schemas.KeyRegistered{KeyID: id, Owner: HubKeyOwner, Role: schemas.RoleHub, Purpose: schemas.PurposeSigning,
		Algorithm: "ed25519", PublicKey: base64.StdEncoding.EncodeToString(pub)}
}

// RotateKey appends to the trust topic the rotation of the hub's key old
// to next, signed by both: from its place in the log on, readers accept
// hub events signed by next and refuse those signed by old alone, and
// next, an anchor's successor, signs trust events. It returns the
// rotation's event id. Before it, run every hub replica with a signer
// that cosigns with next (events.Signer.Cosigner), so that what they
// write around the rotation is accepted on either side of it. opts are
// the producer's (events.WithSigForm).
func RotateKey(ctx context.Context, conn []kgo.Opt, topics events.Topics, old, next *events.Signer, opts ...events.Option) (string, error) {
	if old == nil || next == nil || old.KeyID() == next.KeyID() {
		return "", errors.New("rotate: the current key and a different next key are required")
	}
	both, err := old.Cosigner(next)
	if err != nil {
		return "", err
	}
	e, err := events.New(Source, events.TypeKeyRotated, "keys/"+old.KeyID(), HubKeyOwner,
		schemas.KeyRotated{KeyID: old.KeyID(), Next: hubKey(next.Public(), next.KeyID())})
	if err != nil {
		return "", err
	}
	cl, err := kgo.NewClient(append(append([]kgo.Opt{}, conn...), events.ProducerOpts(nil)...)...)
	if err != nil {
		return "", err
	}
	defer cl.Close()
	p, err := events.NewProducer(cl, both, topics, opts...)
	if err != nil {
		return "", err
	}
	if _, err := p.Publish(ctx, e); err != nil {
		return "", fmt.Errorf("rotate the hub key %s to %s: %w", old.KeyID(), next.KeyID(), err)
	}
	return e.ID(), nil
}

// trustRead returns once the hub's key registry has applied every record
// the trust topic held when it was called: every key committed before is
// known. A transaction's records become readable only when its commit
// marker is written, which the coordinator does after the commit returns,
// so it first waits until every record up to the topic's end (its high
// watermark) is decided (the last stable offset reaches it), then for the
// topic's reader to read that far. Both take milliseconds.
func (s *Server) trustRead(ctx context.Context) error {
	t := s.o.topics[events.TopicTrust]
	end, err := trustOffset(ctx, s.writer.adm.ListEndOffsets, t)
	if err != nil {
		return err
	}
	for {
		stable, err := trustOffset(ctx, s.writer.adm.ListCommittedOffsets, t)
		if err != nil {
			return err
		}
		if stable >= end {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	return s.keys.WaitRead(ctx, end)
}

// trustOffset lists an offset of the trust topic's one partition.
func trustOffset(ctx context.Context, list func(context.Context, ...string) (kadm.ListedOffsets, error), topic string) (int64, error) {
	listed, err := list(ctx, topic)
	if err != nil {
		return 0, fmt.Errorf("hub: offsets of %s: %w", topic, err)
	}
	o, ok := listed.Lookup(topic, 0)
	if !ok || o.Err != nil {
		return 0, fmt.Errorf("hub: offsets of %s: %w", topic, errors.Join(o.Err, errors.New("not listed")))
	}
	return o.Offset, nil
}
