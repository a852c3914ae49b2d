package main

// IBM/sarama: an idempotent SyncProducer with acks=all, and a consumer group marking what it
// read (committed on close).

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/IBM/sarama"
)

func saramaCodec(name string) (sarama.CompressionCodec, error) {
	switch name {
	case "none":
		return sarama.CompressionNone, nil
	case "gzip":
		return sarama.CompressionGZIP, nil
	case "snappy":
		return sarama.CompressionSnappy, nil
	case "lz4":
		return sarama.CompressionLZ4, nil
	case "zstd":
		return sarama.CompressionZSTD, nil
	}
	return sarama.CompressionNone, fmt.Errorf("unknown codec %q", name)
}

// saramaGroup collects one consumer group session's records.
type saramaGroup struct {
	mu     sync.Mutex
	seen   *seen
	want   int
	cancel context.CancelFunc
}

func (g *saramaGroup) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (g *saramaGroup) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (g *saramaGroup) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for m := range claim.Messages() {
		header := ""
		for _, h := range m.Headers {
			if string(h.Key) == "h" {
				header = string(h.Value)
			}
		}
		g.mu.Lock()
		g.seen.add(m.Partition, m.Offset, string(m.Key), string(m.Value), header)
		done := len(g.seen.values) >= g.want || g.seen.mistake != nil
		g.mu.Unlock()
		sess.MarkMessage(m, "")
		if done {
			g.cancel()
		}
	}
	return nil
}

func saramaRoundtrip(ctx context.Context) error {
	comp, err := saramaCodec(*codec)
	if err != nil {
		return err
	}
	addrs := strings.Split(*brokers, ",")
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_6_0_0
	cfg.ClientID = "sarama-peer"
	cfg.Producer.Idempotent = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Producer.Compression = comp
	cfg.Producer.Partitioner = sarama.NewHashPartitioner
	cfg.Net.MaxOpenRequests = 1
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	if *saslUser != "" {
		cfg.Net.SASL.Enable = true
		cfg.Net.SASL.Mechanism = sarama.SASLTypePlaintext
		cfg.Net.SASL.Handshake = true
		cfg.Net.SASL.User = *saslUser
		cfg.Net.SASL.Password = *saslPassword
		if *saslHandshake == 0 {
			cfg.Net.SASL.Version = sarama.SASLHandshakeV0
			// sarama's rule: a v0 client does not send ApiVersions first (as Kafka's clients
			// before 1.0 did not); it speaks the versions of cfg.Version.
			cfg.ApiVersionsRequest = false
		} else {
			cfg.Net.SASL.Version = sarama.SASLHandshakeV1
		}
	}

	admin, err := sarama.NewClusterAdmin(addrs, cfg)
	if err != nil {
		return fmt.Errorf("admin: %w", err)
	}
	defer admin.Close()
	if err := admin.CreateTopic(*topic, &sarama.TopicDetail{NumPartitions: 3, ReplicationFactor: 1}, false); err != nil {
		return fmt.Errorf("create topic: %w", err)
	}

	prod, err := sarama.NewSyncProducer(addrs, cfg)
	if err != nil {
		return fmt.Errorf("producer: %w", err)
	}
	msgs := make([]*sarama.ProducerMessage, 0, *records)
	for i := 0; i < *records; i++ {
		msgs = append(msgs, &sarama.ProducerMessage{
			Topic:   *topic,
			Key:     sarama.StringEncoder(keyOf(i)),
			Value:   sarama.StringEncoder(valueOf(i)),
			Headers: []sarama.RecordHeader{{Key: []byte("h"), Value: []byte(headerOf(i))}},
		})
	}
	if err := prod.SendMessages(msgs); err != nil {
		return fmt.Errorf("send: %w", err)
	}
	if err := prod.Close(); err != nil {
		return err
	}
	check("produced", *records)

	group := "sarama-" + *topic
	cg, err := sarama.NewConsumerGroup(addrs, group, cfg)
	if err != nil {
		return fmt.Errorf("consumer group: %w", err)
	}
	consumeCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	handler := &saramaGroup{seen: newSeen(), want: *records, cancel: cancel}
	for consumeCtx.Err() == nil {
		if err := cg.Consume(consumeCtx, []string{*topic}, handler); err != nil {
			return fmt.Errorf("consume: %w", err)
		}
	}
	// Close commits the marked offsets.
	if err := cg.Close(); err != nil {
		return fmt.Errorf("close group: %w", err)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("read %d of %d records before the deadline", len(handler.seen.values), *records)
	}
	if err := handler.seen.complete(*records); err != nil {
		return err
	}
	check("consumed", len(handler.seen.values))

	client, err := sarama.NewClient(addrs, cfg)
	if err != nil {
		return err
	}
	defer client.Close()
	offsets, err := admin.ListConsumerGroupOffsets(group, map[string][]int32{*topic: {0, 1, 2}})
	if err != nil {
		return fmt.Errorf("group offsets: %w", err)
	}
	var sumCommitted, sumEnd int64
	for p := int32(0); p < 3; p++ {
		end, err := client.GetOffset(*topic, p, sarama.OffsetNewest)
		if err != nil {
			return fmt.Errorf("end offset %d: %w", p, err)
		}
		block := offsets.GetBlock(*topic, p)
		if block == nil || block.Offset != end {
			return fmt.Errorf("partition %d: committed %v, end %d", p, block, end)
		}
		sumCommitted += block.Offset
		sumEnd += end
	}
	check("committed_total", sumCommitted)
	check("end_total", sumEnd)
	return nil
}
