package tests

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/icekeeper/icekeeper/shared/harness/awsrequests"
)

// The rules AWS documents for the calls the functions make and that the
// emulator (kumo) does not apply, checked at the call (enforceCall, in
// iam_test.go): a call that breaks one fails with the error AWS answers,
// so the stage sees what it would see on AWS. Each rule is one function
// and cites its source. Rules on what a write leaves behind (an item's
// size after an UpdateItem) are checked right after the call
// (checkAfterCall), reading the result back from the emulator.

// checkCallRules applies the rules to one call's input; nil when the call
// breaks none.
func checkCallRules(in any) error {
	var rules []func() error
	switch v := in.(type) {
	case *sqs.SendMessageInput:
		rules = append(rules,
			func() error { return sqsMessage(aws.ToString(v.MessageBody), v.MessageAttributes) },
			func() error { return sqsDelay(v.DelaySeconds) })
	case *sqs.SendMessageBatchInput:
		rules = append(rules, func() error { return sqsSendBatch(v.Entries) })
	case *sqs.ReceiveMessageInput:
		rules = append(rules, func() error { return sqsReceive(v) })
	case *sqs.ChangeMessageVisibilityInput:
		rules = append(rules, func() error { return sqsVisibility(v.VisibilityTimeout) })
	case *sqs.DeleteMessageBatchInput:
		rules = append(rules, func() error { return sqsBatchEntries(len(v.Entries)) })
	case *sqs.ChangeMessageVisibilityBatchInput:
		rules = append(rules, func() error { return sqsBatchEntries(len(v.Entries)) })
	case *dynamodb.PutItemInput:
		rules = append(rules,
			func() error { return ddbItemSize(v.Item) },
			func() error {
				return ddbExpressions(v.ExpressionAttributeNames, v.ExpressionAttributeValues, v.ConditionExpression)
			})
	case *dynamodb.UpdateItemInput:
		rules = append(rules, func() error {
			return ddbExpressions(v.ExpressionAttributeNames, v.ExpressionAttributeValues, v.UpdateExpression, v.ConditionExpression)
		})
	case *dynamodb.DeleteItemInput:
		rules = append(rules, func() error {
			return ddbExpressions(v.ExpressionAttributeNames, v.ExpressionAttributeValues, v.ConditionExpression)
		})
	case *dynamodb.GetItemInput:
		rules = append(rules, func() error {
			return ddbExpressions(v.ExpressionAttributeNames, nil, v.ProjectionExpression)
		})
	case *dynamodb.QueryInput:
		rules = append(rules, func() error {
			return ddbExpressions(v.ExpressionAttributeNames, v.ExpressionAttributeValues, v.KeyConditionExpression, v.FilterExpression, v.ProjectionExpression)
		})
	case *dynamodb.TransactWriteItemsInput:
		rules = append(rules, func() error { return ddbTransaction(v.TransactItems) })
	case *dynamodb.BatchWriteItemInput:
		rules = append(rules, func() error { return ddbBatchWrite(v.RequestItems) })
	case *eventbridge.PutEventsInput:
		rules = append(rules, func() error { return eventsPut(v) })
	case *scheduler.CreateScheduleInput:
		rules = append(rules, func() error { return schedulerCreate(v) })
	}
	for _, r := range rules {
		if err := r(); err != nil {
			return err
		}
	}
	return nil
}

// awsError is an error as AWS answers it: its error code and message.
func awsError(code, format string, args ...any) error {
	return &smithy.GenericAPIError{Code: code, Message: "icekeeper tests, as AWS: " + fmt.Sprintf(format, args...), Fault: smithy.FaultClient}
}

// SQS.
const (
	// sqsMaxEntries: "A single message batch request can include a
	// maximum of 10 messages" (Amazon SQS Developer Guide, "Amazon SQS
	// message quotas":
	// https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/quotas-messages.html);
	// the same for DeleteMessageBatch and ChangeMessageVisibilityBatch.
	sqsMaxEntries = 10
	// sqsMaxMessageBytes is the queue's MaximumMessageSize, which bounds
	// every message: the stack sets none, so the default, 262,144 bytes
	// (Amazon SQS API Reference, SetQueueAttributes / CreateQueue,
	// MaximumMessageSize:
	// https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_CreateQueue.html).
	// The API's own ceiling is 1 MiB since 2025 (SendMessage,
	// MessageBody: "The maximum size is 1 MiB or 1,048,576 bytes"), but
	// a queue created without the attribute keeps 256 KiB.
	sqsMaxMessageBytes = 262_144
	// sqsMaxBatchBytes: "The total size of all messages that you send in
	// a single SendMessageBatch call can't exceed 1,048,576 bytes (1
	// MiB)" (Amazon SQS Developer Guide, "Amazon SQS batch actions":
	// https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-batch-api-actions.html).
	sqsMaxBatchBytes = 1_048_576
	// sqsMaxVisibility: visibility timeouts are 0 to 12 hours (quotas,
	// "Message visibility timeout").
	sqsMaxVisibility = 43_200
	// sqsMaxDelay: "The maximum is 15 minutes" (quotas, "Message
	// timer").
	sqsMaxDelay = 900
)

// sqsBatchEntries: a batch has 1 to 10 entries (EmptyBatchRequest,
// TooManyEntriesInBatchRequest: Amazon SQS API Reference,
// SendMessageBatch, Errors:
// https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SendMessageBatch.html).
func sqsBatchEntries(n int) error {
	switch {
	case n == 0:
		return awsError("AWS.SimpleQueueService.EmptyBatchRequest", "the batch has no entry")
	case n > sqsMaxEntries:
		return awsError("AWS.SimpleQueueService.TooManyEntriesInBatchRequest", "%d entries in one batch, at most %d", n, sqsMaxEntries)
	}
	return nil
}

// sqsBatchID: an entry id is up to 80 of alphanumerics, - and _, and
// distinct in its batch (quotas, "Batched message ID"; SendMessageBatch
// errors InvalidBatchEntryId, BatchEntryIdsNotDistinct).
var sqsBatchID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,80}$`)

// sqsMessageBytes is a message's size as SQS counts it against the
// limit: the body and every attribute's name, type and value.
func sqsMessageBytes(body string, attrs map[string]sqstypes.MessageAttributeValue) int {
	n := len(body)
	for k, a := range attrs {
		n += len(k) + len(aws.ToString(a.DataType)) + len(aws.ToString(a.StringValue)) + len(a.BinaryValue)
	}
	return n
}

// sqsMessage: a body is at least one character, at most the queue's
// maximum message size with its attributes, and only of the characters
// #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to
// #x10FFFF (quotas, "Message size", "Message content"); at most 10
// attributes (quotas, "Message attributes").
func sqsMessage(body string, attrs map[string]sqstypes.MessageAttributeValue) error {
	if body == "" {
		return awsError("InvalidParameterValue", "empty message body")
	}
	if n := sqsMessageBytes(body, attrs); n > sqsMaxMessageBytes {
		return awsError("InvalidParameterValue", "message of %d bytes, the queue's maximum message size is %d", n, sqsMaxMessageBytes)
	}
	if len(attrs) > 10 {
		return awsError("InvalidParameterValue", "%d message attributes, at most 10", len(attrs))
	}
	if !utf8.ValidString(body) {
		return awsError("InvalidMessageContents", "the body is not UTF-8")
	}
	for _, r := range body {
		if !(r == 0x9 || r == 0xA || r == 0xD || r >= 0x20 && r <= 0xD7FF || r >= 0xE000 && r <= 0xFFFD || r >= 0x10000 && r <= 0x10FFFF) {
			return awsError("InvalidMessageContents", "character %U is not allowed in a message", r)
		}
	}
	return nil
}

func sqsDelay(d int32) error {
	if d < 0 || d > sqsMaxDelay {
		return awsError("InvalidParameterValue", "DelaySeconds %d, want 0 to %d", d, sqsMaxDelay)
	}
	return nil
}

// sqsSendBatch: the entry count and ids, every message, and the batch's
// total size.
func sqsSendBatch(entries []sqstypes.SendMessageBatchRequestEntry) error {
	if err := sqsBatchEntries(len(entries)); err != nil {
		return err
	}
	seen := map[string]bool{}
	total := 0
	for _, e := range entries {
		id := aws.ToString(e.Id)
		if !sqsBatchID.MatchString(id) {
			return awsError("AWS.SimpleQueueService.InvalidBatchEntryId", "batch entry id %q", id)
		}
		if seen[id] {
			return awsError("AWS.SimpleQueueService.BatchEntryIdsNotDistinct", "batch entry id %q twice", id)
		}
		seen[id] = true
		if err := sqsMessage(aws.ToString(e.MessageBody), e.MessageAttributes); err != nil {
			return err
		}
		if err := sqsDelay(e.DelaySeconds); err != nil {
			return err
		}
		total += sqsMessageBytes(aws.ToString(e.MessageBody), e.MessageAttributes)
	}
	if total > sqsMaxBatchBytes {
		return awsError("AWS.SimpleQueueService.BatchRequestTooLong", "the batch's messages total %d bytes, at most %d", total, sqsMaxBatchBytes)
	}
	return nil
}

// sqsReceive: MaxNumberOfMessages 1 to 10, WaitTimeSeconds 0 to 20
// (Amazon SQS API Reference, ReceiveMessage:
// https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_ReceiveMessage.html),
// a visibility timeout within the quota.
func sqsReceive(v *sqs.ReceiveMessageInput) error {
	if v.MaxNumberOfMessages != 0 && (v.MaxNumberOfMessages < 1 || v.MaxNumberOfMessages > sqsMaxEntries) {
		return awsError("InvalidParameterValue", "MaxNumberOfMessages %d, want 1 to %d", v.MaxNumberOfMessages, sqsMaxEntries)
	}
	if v.WaitTimeSeconds < 0 || v.WaitTimeSeconds > 20 {
		return awsError("InvalidParameterValue", "WaitTimeSeconds %d, want 0 to 20", v.WaitTimeSeconds)
	}
	return sqsVisibility(v.VisibilityTimeout)
}

func sqsVisibility(t int32) error {
	if t < 0 || t > sqsMaxVisibility {
		return awsError("InvalidParameterValue", "VisibilityTimeout %d, want 0 to %d (12 hours)", t, sqsMaxVisibility)
	}
	return nil
}

// DynamoDB.
const (
	// ddbMaxItemBytes: "The maximum item size in DynamoDB is 400 KB,
	// which includes both attribute name binary length (UTF-8 length)
	// and attribute value lengths (again binary length)" (Amazon DynamoDB
	// Developer Guide, "Quotas in Amazon DynamoDB", Items:
	// https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html).
	ddbMaxItemBytes = 400 * 1024
	// ddbMaxTransactItems, ddbMaxTransactBytes: "TransactWriteItems ...
	// can contain up to 100 action requests", and "the aggregate size of
	// the items in the transaction cannot exceed 4 MB" (Amazon DynamoDB
	// API Reference, TransactWriteItems:
	// https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_TransactWriteItems.html).
	ddbMaxTransactItems = 100
	ddbMaxTransactBytes = 4 * 1024 * 1024
	// ddbMaxBatchWrite: "BatchWriteItem ... up to 25 item put or delete
	// operations" (Amazon DynamoDB API Reference, BatchWriteItem:
	// https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_BatchWriteItem.html).
	ddbMaxBatchWrite = 25
	// ddbMaxExpressionBytes: "The maximum length of any expression string
	// is 4 KB" (Quotas in Amazon DynamoDB, "Expression parameters").
	ddbMaxExpressionBytes = 4096
)

// ddbItemBytes is an item's size as DynamoDB counts it
// (awsrequests.ItemBytes).
func ddbItemBytes(item map[string]ddbtypes.AttributeValue) int { return awsrequests.ItemBytes(item) }

// ddbItemSize: an item is at most 400 KB.
func ddbItemSize(item map[string]ddbtypes.AttributeValue) error {
	if n := ddbItemBytes(item); n > ddbMaxItemBytes {
		return awsError("ValidationException", "Item size has exceeded the maximum allowed size (%d bytes, at most %d)", n, ddbMaxItemBytes)
	}
	return nil
}

// ddbPlaceholder finds expression attribute names (#x) and values (:x).
var ddbPlaceholder = regexp.MustCompile(`[#:][A-Za-z0-9_]+`)

// ddbExpressions: every expression at most 4 KB; every placeholder an
// expression uses is defined, and every name and value defined is used
// by one of the request's expressions ("Value provided in
// ExpressionAttributeValues unused in expressions", "An expression
// attribute name used in the document path is not defined": Amazon
// DynamoDB Developer Guide, "Expression attribute names" and "Using
// expression attribute values":
// https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Expressions.ExpressionAttributeNames.html,
// https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Expressions.ExpressionAttributeValues.html);
// and no reserved word is used as a bare attribute name (ddbReserved).
func ddbExpressions(names map[string]string, values map[string]ddbtypes.AttributeValue, exprs ...*string) error {
	used := map[string]bool{}
	for _, e := range exprs {
		s := aws.ToString(e)
		if len(s) > ddbMaxExpressionBytes {
			return awsError("ValidationException", "an expression of %d bytes, at most %d", len(s), ddbMaxExpressionBytes)
		}
		for _, p := range ddbPlaceholder.FindAllString(s, -1) {
			used[p] = true
			_, isName := names[p]
			_, isValue := values[p]
			if !isName && !isValue {
				return awsError("ValidationException", "expression %q uses %s, which the request does not define", s, p)
			}
		}
		if err := ddbReservedWords(s); err != nil {
			return err
		}
	}
	for p := range names {
		if !used[p] {
			return awsError("ValidationException", "Value provided in ExpressionAttributeNames unused in expressions: keys: {%s}", p)
		}
	}
	for p := range values {
		if !used[p] {
			return awsError("ValidationException", "Value provided in ExpressionAttributeValues unused in expressions: keys: {%s}", p)
		}
	}
	return nil
}

// ddbReserved are DynamoDB's reserved words, the 573 moto ships
// (testdata/dynamodb-reserved-words.txt): an expression must name an
// attribute called after one through an expression attribute name (Amazon
// DynamoDB Developer Guide, "Reserved words in DynamoDB":
// https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ReservedWords.html).
var ddbReserved = map[string]bool{}

func init() {
	b, err := os.ReadFile("testdata/dynamodb-reserved-words.txt")
	if err != nil {
		panic(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if w := strings.TrimSpace(line); w != "" && !strings.HasPrefix(w, "#") {
			ddbReserved[strings.ToUpper(w)] = true
		}
	}
	if len(ddbReserved) != 573 {
		panic(fmt.Sprintf("testdata/dynamodb-reserved-words.txt has %d words, the documented list 573", len(ddbReserved)))
	}
}

// ddbFunctionsAndKeywords are the words of the expression grammar
// itself, which may appear bare.
var ddbFunctionsAndKeywords = map[string]bool{
	"SET": true, "REMOVE": true, "ADD": true, "DELETE": true, "AND": true, "OR": true, "NOT": true,
	"BETWEEN": true, "IN": true, "attribute_exists": true, "attribute_not_exists": true, "attribute_type": true,
	"begins_with": true, "contains": true, "size": true, "if_not_exists": true, "list_append": true,
}

var ddbWord = regexp.MustCompile(`[#:]?[A-Za-z_][A-Za-z0-9_]*`)

func ddbReservedWords(expr string) error {
	for _, w := range ddbWord.FindAllString(expr, -1) {
		if w[0] == '#' || w[0] == ':' || ddbFunctionsAndKeywords[w] {
			continue
		}
		if ddbReserved[strings.ToUpper(w)] {
			return awsError("ValidationException", "Invalid expression %q: Attribute name is a reserved keyword; reserved keyword: %s", expr, w)
		}
	}
	return nil
}

// ddbTransaction: at most 100 actions, on distinct items, with their
// expressions valid and the items put at most 4 MB together ("No two
// actions can target the same item": TransactWriteItems).
func ddbTransaction(items []ddbtypes.TransactWriteItem) error {
	if len(items) == 0 || len(items) > ddbMaxTransactItems {
		return awsError("ValidationException", "%d actions in one transaction, want 1 to %d", len(items), ddbMaxTransactItems)
	}
	seen := map[string]bool{}
	total := 0
	for _, it := range items {
		var table string
		var key map[string]ddbtypes.AttributeValue
		var err error
		switch {
		case it.Put != nil:
			table, key = aws.ToString(it.Put.TableName), it.Put.Item
			total += ddbItemBytes(it.Put.Item)
			if err = ddbItemSize(it.Put.Item); err == nil {
				err = ddbExpressions(it.Put.ExpressionAttributeNames, it.Put.ExpressionAttributeValues, it.Put.ConditionExpression)
			}
		case it.Update != nil:
			table, key = aws.ToString(it.Update.TableName), it.Update.Key
			total += ddbItemBytes(it.Update.Key) + len(aws.ToString(it.Update.UpdateExpression))
			err = ddbExpressions(it.Update.ExpressionAttributeNames, it.Update.ExpressionAttributeValues, it.Update.UpdateExpression, it.Update.ConditionExpression)
		case it.Delete != nil:
			table, key = aws.ToString(it.Delete.TableName), it.Delete.Key
			err = ddbExpressions(it.Delete.ExpressionAttributeNames, it.Delete.ExpressionAttributeValues, it.Delete.ConditionExpression)
		case it.ConditionCheck != nil:
			table, key = aws.ToString(it.ConditionCheck.TableName), it.ConditionCheck.Key
			err = ddbExpressions(it.ConditionCheck.ExpressionAttributeNames, it.ConditionCheck.ExpressionAttributeValues, it.ConditionCheck.ConditionExpression)
		}
		if err != nil {
			return err
		}
		id := table + "/" + ddbKeyString(table, key)
		if seen[id] {
			return awsError("ValidationException", "Transaction request cannot include multiple operations on one item (%s)", id)
		}
		seen[id] = true
	}
	if total > ddbMaxTransactBytes {
		return awsError("ValidationException", "the transaction's items total %d bytes, at most %d", total, ddbMaxTransactBytes)
	}
	return nil
}

// ddbKeys are the key attributes of the env's tables (localcloud.Provision).
var ddbKeys = map[string][]string{"${Leases}": {"table_id"}, "${Jobs}": {"job_id", "item_key"}}

// ddbKeyString renders the key attributes of item in table.
func ddbKeyString(table string, item map[string]ddbtypes.AttributeValue) string {
	attrs := ddbKeys[ownResource(table)]
	if attrs == nil {
		attrs = []string{}
		for k := range item {
			attrs = append(attrs, k)
		}
	}
	var parts []string
	for _, a := range attrs {
		if s, ok := item[a].(*ddbtypes.AttributeValueMemberS); ok {
			parts = append(parts, a+"="+s.Value)
		}
	}
	return strings.Join(parts, ",")
}

func ddbBatchWrite(req map[string][]ddbtypes.WriteRequest) error {
	n := 0
	for _, rs := range req {
		n += len(rs)
		for _, r := range rs {
			if r.PutRequest != nil {
				if err := ddbItemSize(r.PutRequest.Item); err != nil {
					return err
				}
			}
		}
	}
	if n == 0 || n > ddbMaxBatchWrite {
		return awsError("ValidationException", "%d requests in one BatchWriteItem, want 1 to %d", n, ddbMaxBatchWrite)
	}
	return nil
}

// checkAfterCall applies the rules on what a successful write leaves: an
// item an UpdateItem (alone or in a transaction) grew past 400 KB is
// refused by DynamoDB (ddbMaxItemBytes), which the emulator does not do;
// the item is read back and measured.
func checkAfterCall(_ context.Context, in any) error {
	type key struct {
		table string
		key   map[string]ddbtypes.AttributeValue
	}
	var keys []key
	switch v := in.(type) {
	case *dynamodb.UpdateItemInput:
		keys = append(keys, key{aws.ToString(v.TableName), v.Key})
	case *dynamodb.TransactWriteItemsInput:
		for _, it := range v.TransactItems {
			if it.Update != nil {
				keys = append(keys, key{aws.ToString(it.Update.TableName), it.Update.Key})
			}
		}
	}
	for _, k := range keys {
		// Not on behalf of a function: not recorded, not enforced.
		out, err := cloud.Clients.DynamoDB.GetItem(context.WithoutCancel(context.Background()), &dynamodb.GetItemInput{TableName: aws.String(k.table), Key: k.key, ConsistentRead: aws.Bool(true)})
		if err != nil {
			return fmt.Errorf("read back %s: %w", k.table, err)
		}
		if err := ddbItemSize(out.Item); err != nil {
			return err
		}
	}
	return nil
}

// EventBridge.
const (
	// eventsMaxEntries: PutEvents takes 1 to 10 entries (Amazon
	// EventBridge API Reference, PutEvents, Entries: "Array Members:
	// Minimum number of 1 item. Maximum number of 10 items":
	// https://docs.aws.amazon.com/eventbridge/latest/APIReference/API_PutEvents.html).
	eventsMaxEntries = 10
	// eventsMaxBytes: "The total entry size must be less than 256KB",
	// counted as the Amazon EventBridge User Guide's "Calculating
	// PutEvents event entry size" does
	// (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-putevent-size.html):
	// 14 bytes for a Time, and the UTF-8 bytes of Source, DetailType,
	// Detail and each Resources entry. Applied to the request's entries
	// together, the stricter reading.
	eventsMaxBytes = 256 * 1024
)

// eventsPut: the entry count, each entry's source, detail type and a
// detail that is a JSON object, and the entries' total size.
func eventsPut(v *eventbridge.PutEventsInput) error {
	if n := len(v.Entries); n == 0 || n > eventsMaxEntries {
		return awsError("ValidationException", "%d entries in one PutEvents, want 1 to %d", n, eventsMaxEntries)
	}
	total := 0
	for _, e := range v.Entries {
		if aws.ToString(e.Source) == "" || aws.ToString(e.DetailType) == "" || aws.ToString(e.Detail) == "" {
			return awsError("ValidationException", "an entry without Source, DetailType or Detail")
		}
		if d := strings.TrimSpace(aws.ToString(e.Detail)); !strings.HasPrefix(d, "{") {
			return awsError("ValidationException", "Detail is not a JSON object: %.40s", d)
		}
		if e.Time != nil {
			total += 14
		}
		total += len(aws.ToString(e.Source)) + len(aws.ToString(e.DetailType)) + len(aws.ToString(e.Detail))
		for _, r := range e.Resources {
			total += len(r)
		}
	}
	if total >= eventsMaxBytes {
		return awsError("ValidationException", "the entries total %d bytes, want less than %d", total, eventsMaxBytes)
	}
	return nil
}

// EventBridge Scheduler.

// schedulerName is a schedule's and a schedule group's name: "Length
// Constraints: Minimum length of 1. Maximum length of 64. Pattern:
// ^[0-9a-zA-Z-_.]+$" (EventBridge Scheduler API Reference, CreateSchedule,
// Name and GroupName:
// https://docs.aws.amazon.com/scheduler/latest/APIReference/API_CreateSchedule.html).
var schedulerName = regexp.MustCompile(`^[0-9a-zA-Z\-_.]{1,64}$`)

// schedulerAt is a one-time schedule's expression, "at(yyyy-mm-ddThh:mm:ss)"
// (EventBridge Scheduler User Guide, "Schedule types", one-time
// schedules:
// https://docs.aws.amazon.com/scheduler/latest/UserGuide/schedule-types.html).
var schedulerAt = regexp.MustCompile(`^at\(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\)$`)

// schedulerCreate checks a CreateSchedule's names and, for a one-time
// schedule, its expression; the SDK checks the required members.
func schedulerCreate(in *scheduler.CreateScheduleInput) error {
	for what, name := range map[string]string{"Name": aws.ToString(in.Name), "GroupName": aws.ToString(in.GroupName)} {
		if what == "GroupName" && name == "" {
			continue // the default group
		}
		if !schedulerName.MatchString(name) {
			return awsError("ValidationException", "1 validation error detected: Value %q at '%s' failed to satisfy constraint: Member must satisfy regular expression pattern: ^[0-9a-zA-Z-_.]+$ and length 1 to 64", name, what)
		}
	}
	if e := aws.ToString(in.ScheduleExpression); strings.HasPrefix(e, "at(") && !schedulerAt.MatchString(e) {
		return awsError("ValidationException", "Invalid Schedule Expression %s.", e)
	}
	return nil
}
