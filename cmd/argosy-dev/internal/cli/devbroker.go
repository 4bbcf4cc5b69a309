package cli

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// startBroker starts the embedded Kafka-compatible broker of argosy dev:
// franz-go's kfake, one broker on 127.0.0.1, its log kept in dir.
//
// Every Argosy topic stamps records with the broker's LogAppendTime, and
// readers refuse records a producer stamped (docs/design.md). kfake keeps
// the producer's time, and gets the checksum wrong when a batch asks for
// LogAppendTime, so the broker stamps each produced batch with its own
// clock as it takes it, a CreateTime that is the broker's, and argosy
// dev's components accept it (events.AcceptCreateTime).
func startBroker(dir string, port int) (*kfake.Cluster, error) {
	var c *kfake.Cluster
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(port), kfake.DataDir(dir), kfake.ClusterID("argosy-dev"))
	if err != nil {
		return nil, fmt.Errorf("embedded broker: %w", err)
	}
	c.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		now := time.Now().UnixMilli()
		for i := range req.(*kmsg.ProduceRequest).Topics {
			t := &req.(*kmsg.ProduceRequest).Topics[i]
			for j := range t.Partitions {
				stamp(t.Partitions[j].Records, now)
			}
		}
		return nil, nil, false
	})
	return c, nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// stamp sets the first and last timestamps of every v2 record batch in
// records to now, keeping its records' offsets from the first, and
// recomputes its checksum. Batches it cannot read are left for the broker
// to refuse.
func stamp(records []byte, now int64) {
	const (
		lengthAt = 8  // batchLength int32, after baseOffset int64
		magicAt  = 16 // magic int8
		crcAt    = 17 // crc int32, covering attributes to the end
		attrsAt  = 21 // attributes int16, then lastOffsetDelta int32
		firstAt  = 27 // firstTimestamp int64
		maxAt    = 35 // maxTimestamp int64
		control  = 0x20
	)
	for len(records) > maxAt+8 {
		n := int(int32(binary.BigEndian.Uint32(records[lengthAt:]))) + 12
		if n <= maxAt+8 || n > len(records) || records[magicAt] != 2 {
			return
		}
		b := records[:n]
		if binary.BigEndian.Uint16(b[attrsAt:])&control == 0 {
			first, last := int64(binary.BigEndian.Uint64(b[firstAt:])), int64(binary.BigEndian.Uint64(b[maxAt:]))
			binary.BigEndian.PutUint64(b[firstAt:], uint64(now))
			binary.BigEndian.PutUint64(b[maxAt:], uint64(now+max(last-first, 0)))
			binary.BigEndian.PutUint32(b[crcAt:], crc32.Checksum(b[attrsAt:], castagnoli))
		}
		records = records[n:]
	}
}
