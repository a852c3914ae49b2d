package main

// segmentio/kafka-go: Writer with the hash balancer and acks=all, a group Reader committing
// what it read.

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"
)

func kafkagoCodec(name string) (kafka.Compression, error) {
	switch name {
	case "none":
		return 0, nil
	case "gzip":
		return kafka.Gzip, nil
	case "snappy":
		return kafka.Snappy, nil
	case "lz4":
		return kafka.Lz4, nil
	case "zstd":
		return kafka.Zstd, nil
	}
	return 0, fmt.Errorf("unknown codec %q", name)
}

func kafkagoRoundtrip(ctx context.Context) error {
	comp, err := kafkagoCodec(*codec)
	if err != nil {
		return err
	}
	addrs := strings.Split(*brokers, ",")
	client := &kafka.Client{Addr: kafka.TCP(addrs...), Timeout: 20 * time.Second}
	created, err := client.CreateTopics(ctx, &kafka.CreateTopicsRequest{
		Topics: []kafka.TopicConfig{{Topic: *topic, NumPartitions: 3, ReplicationFactor: 1}},
	})
	if err != nil {
		return fmt.Errorf("create topic: %w", err)
	}
	if e := created.Errors[*topic]; e != nil {
		return fmt.Errorf("create topic: %w", e)
	}

	w := &kafka.Writer{
		Addr:         kafka.TCP(addrs...),
		Topic:        *topic,
		Balancer:     &kafka.Hash{},
		RequiredAcks: kafka.RequireAll,
		Compression:  comp,
		BatchSize:    100,
		BatchTimeout: 5 * time.Millisecond,
	}
	msgs := make([]kafka.Message, 0, *records)
	for i := 0; i < *records; i++ {
		msgs = append(msgs, kafka.Message{
			Key:     []byte(keyOf(i)),
			Value:   []byte(valueOf(i)),
			Headers: []kafka.Header{{Key: "h", Value: []byte(headerOf(i))}},
		})
	}
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	if err := w.Close(); err != nil {
		return err
	}
	check("produced", *records)

	group := "kafkago-" + *topic
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers:     addrs,
		GroupID:     group,
		Topic:       *topic,
		MaxBytes:    10 << 20,
		StartOffset: kafka.FirstOffset,
		MaxWait:     200 * time.Millisecond,
	})
	s := newSeen()
	for len(s.values) < *records && s.mistake == nil {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return fmt.Errorf("fetch after %d records: %w", len(s.values), err)
		}
		header := ""
		for _, h := range m.Headers {
			if h.Key == "h" {
				header = string(h.Value)
			}
		}
		s.add(int32(m.Partition), m.Offset, string(m.Key), string(m.Value), header)
		if err := r.CommitMessages(ctx, m); err != nil {
			return fmt.Errorf("commit: %w", err)
		}
	}
	if err := r.Close(); err != nil {
		return err
	}
	if err := s.complete(*records); err != nil {
		return err
	}
	check("consumed", len(s.values))

	fetched, err := client.OffsetFetch(ctx, &kafka.OffsetFetchRequest{
		GroupID: group,
		Topics:  map[string][]int{*topic: {0, 1, 2}},
	})
	if err != nil {
		return fmt.Errorf("offset fetch: %w", err)
	}
	listed, err := client.ListOffsets(ctx, &kafka.ListOffsetsRequest{
		Topics: map[string][]kafka.OffsetRequest{
			*topic: {kafka.LastOffsetOf(0), kafka.LastOffsetOf(1), kafka.LastOffsetOf(2)},
		},
	})
	if err != nil {
		return fmt.Errorf("list offsets: %w", err)
	}
	ends := map[int]int64{}
	var sumEnd int64
	for _, p := range listed.Topics[*topic] {
		if p.Error != nil {
			return fmt.Errorf("list offsets %d: %w", p.Partition, p.Error)
		}
		ends[p.Partition] = p.LastOffset
		sumEnd += p.LastOffset
	}
	var sumCommitted int64
	for _, p := range fetched.Topics[*topic] {
		if p.Error != nil {
			return fmt.Errorf("offset fetch %d: %w", p.Partition, p.Error)
		}
		if p.CommittedOffset != ends[p.Partition] {
			return fmt.Errorf("partition %d: committed %d, end %d", p.Partition, p.CommittedOffset, ends[p.Partition])
		}
		sumCommitted += p.CommittedOffset
	}
	check("committed_total", sumCommitted)
	check("end_total", sumEnd)
	return nil
}
