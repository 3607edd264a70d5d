#!/bin/sh
# A toy support bot: reads the question from its first argument and answers.
# It also writes a trace (tool calls and usage) to $EVALGATE_TRACE, as real agents can.
question="$1"
case "$question" in
  *refund*)
    answer="You can get a full refund within 30 days of purchase."
    tool='{"name": "lookup_policy", "arguments": {"topic": "refunds"}}'
    ;;
  *order*)
    answer='{"order_id": "A-1042", "status": "shipped", "eta_days": 2}'
    tool='{"name": "get_order", "arguments": {"id": "A-1042"}}'
    ;;
  *)
    answer="Hello! How can I help you today?"
    tool=''
    ;;
esac
printf '%s\n' "$answer"
if [ -n "$EVALGATE_TRACE" ]; then
  printf '{"tool_calls": [%s], "usage": {"input_tokens": 42, "output_tokens": 17, "cost_usd": 0.0001}, "model": "toy-bot-1"}\n' \
    "$tool" > "$EVALGATE_TRACE"
fi
