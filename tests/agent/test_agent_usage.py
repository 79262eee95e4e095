"""Usage from the CLI's final result: summed over every model (the auxiliary one
included), per-model split, the two casings, the lifetime split where reported."""

from benchkit.agent import usage

# The shape the CLI reports (seen from claude-agent-sdk 0.2.189): a main and an
# auxiliary model, only the main one reporting the cache-write lifetime split.
MODEL_USAGE = {
    "claude-sonnet-4-5": {"inputTokens": 14, "outputTokens": 26, "cacheReadInputTokens": 22,
                          "cacheCreationInputTokens": 100, "webSearchRequests": 0,
                          "costUSD": 0.0009, "contextWindow": 200000,
                          "cacheCreationEphemeral5mInputTokens": 40,
                          "cacheCreationEphemeral1hInputTokens": 60},
    "claude-haiku-4-5": {"inputTokens": 300, "outputTokens": 12, "cacheReadInputTokens": 0,
                         "cacheCreationInputTokens": 0, "costUSD": 0.0001},
}
AGGREGATE = {"input_tokens": 14, "cache_creation_input_tokens": 100, "cache_read_input_tokens": 22,
             "output_tokens": 26,
             "cache_creation": {"ephemeral_1h_input_tokens": 60, "ephemeral_5m_input_tokens": 40}}


def test_sums_every_model_and_keeps_the_split():
    total, by_model = usage.from_result(MODEL_USAGE, AGGREGATE)
    assert total == {"input": 314, "cache_write": 100, "cache_write_5m": 40, "cache_write_1h": 60,
                     "cache_read": 22, "output": 38}
    assert by_model["claude-haiku-4-5"] == {"input": 300, "cache_write": 0, "cache_write_5m": None,
                                            "cache_write_1h": None, "cache_read": 0, "output": 12}
    assert by_model["claude-sonnet-4-5"]["cache_write_1h"] == 60


def test_the_aggregate_is_the_fallback():
    total, by_model = usage.from_result(None, AGGREGATE)
    assert total == {"input": 14, "cache_write": 100, "cache_write_5m": 40, "cache_write_1h": 60,
                     "cache_read": 22, "output": 26}
    assert by_model == {}
    total, _ = usage.from_result({}, {"input_tokens": 5, "output_tokens": 1})
    assert (total["input"], total["cache_write_5m"]) == (5, None)


def test_nothing_reported_is_zero():
    total, by_model = usage.from_result(None, None)
    assert total["input"] == total["output"] == 0 and by_model == {}


def test_message_usage_counts_each_api_message_once_per_model():
    per_message = {"msg_1": ("claude-sonnet-4-5", {"input_tokens": 10, "output_tokens": 1}),
                   "msg_2": ("claude-sonnet-4-5", {"input_tokens": 20, "output_tokens": 1,
                                                   "cache_read_input_tokens": 7}),
                   "msg_3": ("claude-haiku-4-5", {"input_tokens": 3, "output_tokens": 2})}
    total, by_model = usage.from_messages(per_message)
    assert (total["input"], total["cache_read"], total["output"]) == (33, 7, 4)
    assert by_model["claude-haiku-4-5"]["input"] == 3
    assert total["cache_write_5m"] is None


def test_a_split_that_does_not_add_up_is_unknown():
    # The CLI fills in 0/0 when the API (or the replay's scripted model) gave no split.
    entry = {"inputTokens": 0, "outputTokens": 50, "cacheReadInputTokens": 3743,
             "cacheCreationInputTokens": 4777, "cacheCreationEphemeral5mInputTokens": 0,
             "cacheCreationEphemeral1hInputTokens": 0}
    total, by_model = usage.from_result({"claude-sonnet-4-5": entry}, None)
    assert (total["cache_write"], total["cache_write_5m"], total["cache_write_1h"]) == (4777, None, None)
    assert by_model["claude-sonnet-4-5"]["cache_write_5m"] is None
    api = {"cache_creation_input_tokens": 80, "cache_creation": {"ephemeral_5m_input_tokens": 0,
                                                                "ephemeral_1h_input_tokens": 0}}
    assert usage.from_api_usage(api)["cache_write_1h"] is None
    # Nothing written: a 0/0 split is exact.
    nothing = {**entry, "cacheCreationInputTokens": 0}
    assert usage.from_model_usage(nothing)["cache_write_5m"] == 0
