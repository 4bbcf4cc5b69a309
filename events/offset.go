package events

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// What ListOffset lists, besides the first offset at or after a
// millisecond timestamp.
const (
	// ListEnd is a partition's end: its high watermark or, listed
	// committed, its last stable offset.
	ListEnd int64 = -1
	// ListStart is a partition's first offset still held.
	ListStart int64 = -2
)

// ListOffset lists one offset of one partition: at ListEnd, ListStart or
// the first offset at or after a millisecond timestamp (the high
// watermark if none is, as kadm does); committed lists as a read
// committed consumer sees the partition. It sends one ListOffsets
// request, which the client routes to the partition's leader alone. A
// kadm listing asks for every partition of the topic, and so a request to
// every broker that leads one of them, after a Metadata request: for an
// agent, which reads one partition, a connection to every broker of the
// cluster held open by its periodic listings.
func ListOffset(ctx context.Context, cl *kgo.Client, topic string, partition int32, at int64, committed bool) (int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	if committed {
		req.IsolationLevel = 1
	}
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp = partition, at
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return 0, fmt.Errorf("list offset of %s/%d: %w", topic, partition, err)
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if t.Topic != topic || p.Partition != partition {
				continue
			}
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return 0, fmt.Errorf("list offset of %s/%d: %w", topic, partition, err)
			}
			if at >= 0 && p.Offset == -1 { // none at or after the time
				return ListOffset(ctx, cl, topic, partition, ListEnd, false)
			}
			return p.Offset, nil
		}
	}
	return 0, fmt.Errorf("list offset of %s/%d: not in the response", topic, partition)
}
