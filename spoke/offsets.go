package spoke

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/argosyproj/argosy/events"
)

// ConfigOffsetKey is the state key of the agent's config offset: its
// Applied record's Offset is the offset of the next record of the config
// partition to read (Partition) and At when it was written. The agent
// keeps it in its own state rather than in a consumer group, so that the
// brokers' group coordinators hold nothing for each cluster.
const ConfigOffsetKey = "config-offset"

// offsets keeps the config offset of one agent in its state store. It is
// the config reader's events.OffsetStore, and the bootstrap's checkpoint.
// An agent upgraded from a version that committed its offsets to a
// consumer group starts where the group's offset says, once: the first
// load that finds no offset in the state copies the group's there, and
// nothing writes the group again.
type offsets struct {
	state     StateStore
	adm       *kadm.Client
	group     string // where an older agent committed its offsets
	topic     string
	partition int32
}

var _ events.OffsetStore = (*offsets)(nil)

func newOffsets(state StateStore, adm *kadm.Client, group, topic string, partition int32) *offsets {
	return &offsets{state: state, adm: adm, group: group, topic: topic, partition: partition}
}

// stored returns the offset in the state, if there is one of the agent's
// partition. One of another partition (the agent was pinned to another
// one since) is none, as a group holds none for a partition it never
// read.
func (o *offsets) stored(ctx context.Context) (int64, bool, error) {
	rec, ok, err := o.state.Get(ctx, ConfigOffsetKey)
	if err != nil || !ok || rec.Partition != o.partition {
		return 0, false, err
	}
	return rec.Offset, true, nil
}

// load returns the offset in the state or, if there is none, the group's,
// which it copies into the state.
func (o *offsets) load(ctx context.Context) (int64, bool, error) {
	next, ok, err := o.stored(ctx)
	if err != nil || ok {
		return next, ok, err
	}
	committed, err := o.adm.FetchOffsets(ctx, o.group)
	if errors.Is(err, kerr.GroupIDNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("config offset: group %s: %w", o.group, err)
	}
	c, ok := committed.Lookup(o.topic, o.partition)
	if !ok || c.Err != nil || c.At < 0 {
		return 0, false, nil
	}
	if err := o.put(ctx, c.At); err != nil {
		return 0, false, err
	}
	return c.At, true, nil
}

// Offsets implements events.OffsetStore.
func (o *offsets) Offsets(ctx context.Context, topic string, partitions []int32) (map[int32]int64, error) {
	if err := o.check(topic, partitions...); err != nil {
		return nil, err
	}
	next, ok, err := o.load(ctx)
	if err != nil || !ok {
		return nil, err
	}
	return map[int32]int64{o.partition: next}, nil
}

// Commit implements events.OffsetStore.
func (o *offsets) Commit(ctx context.Context, topic string, partition int32, next int64) error {
	if err := o.check(topic, partition); err != nil {
		return err
	}
	return o.put(ctx, next)
}

// advance moves the offset to next, unless it is further already.
func (o *offsets) advance(ctx context.Context, next int64) error {
	cur, ok, err := o.load(ctx)
	if err != nil || (ok && cur >= next) {
		return err
	}
	return o.put(ctx, next)
}

func (o *offsets) put(ctx context.Context, next int64) error {
	if err := o.state.Put(ctx, ConfigOffsetKey, Applied{Partition: o.partition, Offset: next, At: time.Now().UTC()}); err != nil {
		return fmt.Errorf("config offset: %w", err)
	}
	return nil
}

// check refuses any partition but the agent's: its state keeps one offset.
func (o *offsets) check(topic string, partitions ...int32) error {
	for _, p := range partitions {
		if topic != o.topic || p != o.partition {
			return events.Fatal(fmt.Errorf("config offset: the state keeps %s/%d's, not %s/%d's", o.topic, o.partition, topic, p))
		}
	}
	return nil
}
