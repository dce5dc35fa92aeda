// Package audit puts icekeeper's audit events on an EventBridge bus, so
// operators can route them (to a pager, a ticket queue, a log archive) with
// ordinary EventBridge rules.
//
// Events have source "icekeeper" and one of the detail types below; the
// detail is JSON. Publishing is best effort for the caller's work (an audit
// failure never blocks or undoes maintenance) but its error is returned so
// the caller logs and counts it.
package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
)

// Source is the source of every icekeeper audit event.
const Source = "icekeeper"

// Detail types.
const (
	// DetailOptInWithoutGrant: a table's owner set the opt-in property but
	// the operator has not granted the table or its namespace.
	DetailOptInWithoutGrant = "Icekeeper Opt-in Without Grant"
	// DetailInvalidProperties: a table carries icekeeper properties that were
	// rejected (for example credential-shaped ones).
	DetailInvalidProperties = "Icekeeper Invalid Table Properties"
)

// EventBridge is the subset of the EventBridge client the publisher needs.
type EventBridge interface {
	PutEvents(ctx context.Context, in *eventbridge.PutEventsInput, opts ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error)
}

// Publisher puts audit events on one bus.
type Publisher struct {
	client EventBridge
	bus    string
}

// NewPublisher validates its arguments and returns a Publisher.
func NewPublisher(client EventBridge, bus string) (*Publisher, error) {
	if client == nil {
		return nil, errors.New("audit: nil EventBridge client")
	}
	if bus == "" {
		bus = "default"
	}
	return &Publisher{client: client, bus: bus}, nil
}

// TableEvent is the detail of a table-scoped audit event.
type TableEvent struct {
	Table  string `json:"table"`
	Reason string `json:"reason"`
	// Trigger is what made icekeeper look at the table.
	Trigger string `json:"trigger,omitempty"`
}

// Publish puts one event with the given detail type.
func (p *Publisher) Publish(ctx context.Context, detailType string, detail any) error {
	b, err := json.Marshal(detail)
	if err != nil {
		return fmt.Errorf("audit: encode %s: %w", detailType, err)
	}
	out, err := p.client.PutEvents(ctx, &eventbridge.PutEventsInput{Entries: []types.PutEventsRequestEntry{{
		EventBusName: aws.String(p.bus), Source: aws.String(Source), DetailType: aws.String(detailType), Detail: aws.String(string(b)),
	}}})
	if err != nil {
		return fmt.Errorf("audit: put %s on bus %s: %w", detailType, p.bus, err)
	}
	if out.FailedEntryCount > 0 && len(out.Entries) > 0 {
		e := out.Entries[0]
		return fmt.Errorf("audit: put %s on bus %s: %s %s", detailType, p.bus, aws.ToString(e.ErrorCode), aws.ToString(e.ErrorMessage))
	}
	return nil
}
