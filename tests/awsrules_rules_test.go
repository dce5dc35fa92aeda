package tests

import (
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
)

// The call rules of awsrules_test.go and the policy evaluation of
// iam_test.go, each at its bound: what AWS accepts passes, one past it
// fails with AWS's error code.

func wantCode(t *testing.T, what string, err error, code string) {
	t.Helper()
	var ae smithy.APIError
	switch {
	case code == "" && err != nil:
		t.Errorf("%s: %v, want accepted", what, err)
	case code != "" && (!errors.As(err, &ae) || ae.ErrorCode() != code):
		t.Errorf("%s: %v, want %s", what, err, code)
	}
}

func TestAWSRules_SQSBatchesAtTheirBounds(t *testing.T) {
	entries := func(n, size int) []sqstypes.SendMessageBatchRequestEntry {
		var out []sqstypes.SendMessageBatchRequestEntry
		for i := range n {
			out = append(out, sqstypes.SendMessageBatchRequestEntry{Id: aws.String(string(rune('a' + i))), MessageBody: aws.String(strings.Repeat("x", size))})
		}
		return out
	}
	wantCode(t, "10 entries", checkCallRules(&sqs.SendMessageBatchInput{Entries: entries(10, 10)}), "")
	wantCode(t, "11 entries", checkCallRules(&sqs.SendMessageBatchInput{Entries: entries(11, 10)}), "AWS.SimpleQueueService.TooManyEntriesInBatchRequest")
	wantCode(t, "no entry", checkCallRules(&sqs.SendMessageBatchInput{}), "AWS.SimpleQueueService.EmptyBatchRequest")
	wantCode(t, "4 x 256 KiB", checkCallRules(&sqs.SendMessageBatchInput{Entries: entries(4, sqsMaxMessageBytes)}), "")
	wantCode(t, "5 x 256 KiB", checkCallRules(&sqs.SendMessageBatchInput{Entries: entries(5, sqsMaxMessageBytes)}), "AWS.SimpleQueueService.BatchRequestTooLong")
	wantCode(t, "a message one byte over", checkCallRules(&sqs.SendMessageInput{MessageBody: aws.String(strings.Repeat("x", sqsMaxMessageBytes+1))}), "InvalidParameterValue")
	dup := entries(2, 1)
	dup[1].Id = dup[0].Id
	wantCode(t, "duplicate ids", checkCallRules(&sqs.SendMessageBatchInput{Entries: dup}), "AWS.SimpleQueueService.BatchEntryIdsNotDistinct")
	wantCode(t, "a NUL character", checkCallRules(&sqs.SendMessageInput{MessageBody: aws.String("a\x00b")}), "InvalidMessageContents")
	wantCode(t, "visibility 12 h", checkCallRules(&sqs.ChangeMessageVisibilityInput{VisibilityTimeout: 43_200}), "")
	wantCode(t, "visibility 12 h 1 s", checkCallRules(&sqs.ChangeMessageVisibilityInput{VisibilityTimeout: 43_201}), "InvalidParameterValue")
	wantCode(t, "receive 11", checkCallRules(&sqs.ReceiveMessageInput{MaxNumberOfMessages: 11}), "InvalidParameterValue")
}

func TestAWSRules_DynamoDBItemsTransactionsAndExpressions(t *testing.T) {
	item := func(bytes int) map[string]ddbtypes.AttributeValue {
		return map[string]ddbtypes.AttributeValue{"k": &ddbtypes.AttributeValueMemberS{Value: strings.Repeat("x", bytes-1)}}
	}
	wantCode(t, "a 400 KB item", checkCallRules(&dynamodb.PutItemInput{Item: item(ddbMaxItemBytes)}), "")
	wantCode(t, "an item one byte over", checkCallRules(&dynamodb.PutItemInput{Item: item(ddbMaxItemBytes + 1)}), "ValidationException")
	upd := func(key string) ddbtypes.TransactWriteItem {
		return ddbtypes.TransactWriteItem{Update: &ddbtypes.Update{TableName: aws.String("other"), Key: map[string]ddbtypes.AttributeValue{"id": &ddbtypes.AttributeValueMemberS{Value: key}},
			UpdateExpression: aws.String("SET a = :a"), ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":a": &ddbtypes.AttributeValueMemberN{Value: "1"}}}}
	}
	var hundred []ddbtypes.TransactWriteItem
	for i := range 101 {
		hundred = append(hundred, upd(strings.Repeat("k", i+1)))
	}
	wantCode(t, "100 actions", checkCallRules(&dynamodb.TransactWriteItemsInput{TransactItems: hundred[:100]}), "")
	wantCode(t, "101 actions", checkCallRules(&dynamodb.TransactWriteItemsInput{TransactItems: hundred}), "ValidationException")
	wantCode(t, "two actions on one item", checkCallRules(&dynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{upd("a"), upd("a")}}), "ValidationException")
	wantCode(t, "an unused value", checkCallRules(&dynamodb.UpdateItemInput{UpdateExpression: aws.String("SET a = :a"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":a": &ddbtypes.AttributeValueMemberN{Value: "1"}, ":b": &ddbtypes.AttributeValueMemberN{Value: "2"}}}), "ValidationException")
	wantCode(t, "an undefined value", checkCallRules(&dynamodb.UpdateItemInput{UpdateExpression: aws.String("SET a = :a")}), "ValidationException")
	wantCode(t, "a reserved word", checkCallRules(&dynamodb.UpdateItemInput{UpdateExpression: aws.String("SET status = :a"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":a": &ddbtypes.AttributeValueMemberN{Value: "1"}}}), "ValidationException")
	// Words of the full list that the old subset did not have.
	for _, w := range []string{"compact", "bucket", "duration", "batch", "token", "Attempt"} {
		if !ddbReserved[strings.ToUpper(w)] {
			continue // not on the list
		}
		wantCode(t, "the reserved word "+w, checkCallRules(&dynamodb.UpdateItemInput{UpdateExpression: aws.String("SET " + w + " = :a"),
			ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":a": &ddbtypes.AttributeValueMemberN{Value: "1"}}}), "ValidationException")
	}
	if !ddbReserved["COMPACT"] || !ddbReserved["DURATION"] || ddbReserved["LEASE_OWNER"] {
		t.Fatal("the reserved words are not DynamoDB's full list")
	}
	wantCode(t, "a reserved word through a name", checkCallRules(&dynamodb.UpdateItemInput{UpdateExpression: aws.String("SET #s = :a"),
		ExpressionAttributeNames:  map[string]string{"#s": "status"},
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":a": &ddbtypes.AttributeValueMemberN{Value: "1"}}}), "")
}

func TestAWSRules_EventBridgePutEventsAtItsBounds(t *testing.T) {
	entry := func(detail int) ebtypes.PutEventsRequestEntry {
		return ebtypes.PutEventsRequestEntry{Source: aws.String("s"), DetailType: aws.String("d"), Detail: aws.String(`{"x":"` + strings.Repeat("y", detail) + `"}`)}
	}
	var eleven []ebtypes.PutEventsRequestEntry
	for range 11 {
		eleven = append(eleven, entry(1))
	}
	wantCode(t, "10 entries", checkCallRules(&eventbridge.PutEventsInput{Entries: eleven[:10]}), "")
	wantCode(t, "11 entries", checkCallRules(&eventbridge.PutEventsInput{Entries: eleven}), "ValidationException")
	wantCode(t, "just under 256 KB", checkCallRules(&eventbridge.PutEventsInput{Entries: []ebtypes.PutEventsRequestEntry{entry(eventsMaxBytes - 11)}}), "")
	wantCode(t, "256 KB", checkCallRules(&eventbridge.PutEventsInput{Entries: []ebtypes.PutEventsRequestEntry{entry(eventsMaxBytes - 10)}}), "ValidationException")
}

// TestIAMEvaluation_AnExplicitDenyWinsOverAnyAllow: a Deny statement
// matching the request denies it whatever allows it; a request no
// statement matches is denied; a condition on a key the request does not
// carry does not hold.
func TestIAMEvaluation_AnExplicitDenyWinsOverAnyAllow(t *testing.T) {
	sts := []policyStatement{
		{Sid: "All", Effect: "Allow", Actions: []string{"s3:DeleteObject", "s3:GetObject"}, Resources: []string{"arn:aws:s3:::lake/t/*"}},
		{Sid: "Kept", Effect: "Deny", Actions: []string{"s3:DeleteObject"}, Resources: []string{"arn:aws:s3:::lake/t/*.metadata.json"}},
		{Sid: "List", Effect: "Allow", Actions: []string{"s3:ListBucket"}, Resources: []string{"arn:aws:s3:::lake"}, Condition: map[string]any{"StringLike": map[string]any{"s3:prefix": []any{"t/*"}}}},
	}
	for _, c := range []struct {
		a    authorization
		want bool
	}{
		{authorization{Action: "s3:DeleteObject", Resource: "arn:aws:s3:::lake/t/data/a.parquet"}, true},
		{authorization{Action: "s3:DeleteObject", Resource: "arn:aws:s3:::lake/t/metadata/00001-x.metadata.json"}, false},
		{authorization{Action: "s3:GetObject", Resource: "arn:aws:s3:::lake/t/metadata/00001-x.metadata.json"}, true},
		{authorization{Action: "s3:PutObject", Resource: "arn:aws:s3:::lake/t/data/a.parquet"}, false},
		{authorization{Action: "s3:ListBucket", Resource: "arn:aws:s3:::lake", Prefix: "t/data/"}, true},
		{authorization{Action: "s3:ListBucket", Resource: "arn:aws:s3:::lake"}, false},
	} {
		if _, got := allowed(sts, c.a); got != c.want {
			t.Errorf("%s on %s (prefix %q): allowed %t, want %t", c.a.Action, c.a.Resource, c.a.Prefix, got, c.want)
		}
	}
}
