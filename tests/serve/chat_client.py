"""Drives `lorascope-cli serve`'s chat routes the way OpenAI and vLLM users do: with OpenAI's own
Python client (openai from PyPI) on /v1/chat/completions, whole and streamed, and with plain HTTP
for LoRAX's chat form (/generate with apply_chat_template). Run by tests/serve/test_serve_chat.cpp.

usage: chat_client.py URL COMMAND [ARGS]
  parity CASES.json   one JSON line per case and mode (chat, chat_stream, lorax_chat): text, token ids,
                      logprobs, finish reason, usage
  errors              the answers to a template's refusal and to malformed conversations
  no-template         the answer of a server whose model has no chat template
Assertions fail with a message and exit status 1; results go to stdout as JSON.
"""
import json
import sys

import httpx
import openai
import requests


def check(condition, message):
    if not condition:
        sys.exit("FAIL: " + message)   # to stderr, exit status 1


def fail(message):
    check(False, message)


def client_for(url):
    # No pooled connections: serve closes a connection idle for --keep-alive-seconds (5 s), and
    # httpx reusing one just as it closes fails the request (seen once in a loaded full-suite run).
    # A fresh connection per request keeps max_retries=0 honest: nothing is sent twice.
    http_client = httpx.Client(limits=httpx.Limits(max_keepalive_connections=0), timeout=120)
    return openai.OpenAI(api_key="unused", base_url=url + "/v1", timeout=120, max_retries=0,
                         http_client=http_client)


def ids_of(entries):
    # vLLM's return_tokens_as_token_ids: each token is named "token_id:N".
    out = []
    for e in entries:
        check(e.token.startswith("token_id:"), "a logprobs token not named by its id: %r" % e.token)
        out.append(int(e.token[len("token_id:"):]))
    return out


def chat_kwargs(case):
    return dict(model=case.get("model", ""), messages=case["messages"], max_tokens=case["max_tokens"], temperature=0,
                logprobs=True, top_logprobs=2,
                extra_body={"repetition_penalty": case["repetition_penalty"], "return_tokens_as_token_ids": True})


def run_chat(client, case):
    r = client.chat.completions.create(**chat_kwargs(case))
    check(r.object == "chat.completion" and r.id.startswith("chatcmpl-"), "not a chat.completion: %s" % r)
    choice = r.choices[0]
    check(choice.message.role == "assistant", "the answer's role is %r" % choice.message.role)
    content = choice.logprobs.content
    for e in content:
        check(len(e.top_logprobs) == 2, "top_logprobs=2 gave %d alternatives" % len(e.top_logprobs))
        check(e.top_logprobs[0].logprob >= e.top_logprobs[1].logprob, "alternatives not most likely first")
    print(json.dumps({"case": case["id"], "mode": "chat", "text": choice.message.content,
                      "token_ids": ids_of(content), "logprobs": [e.logprob for e in content],
                      "finish_reason": choice.finish_reason, "prompt_tokens": r.usage.prompt_tokens,
                      "completion_tokens": r.usage.completion_tokens}), flush=True)


def run_chat_stream(client, case):
    text, ids, logprobs, finish, usage, roles, chunks = "", [], [], None, None, [], 0
    for chunk in client.chat.completions.create(stream=True, **chat_kwargs(case)):
        chunks += 1
        check(chunk.object == "chat.completion.chunk", "not a chat.completion.chunk: %s" % chunk)
        choice = chunk.choices[0]
        if choice.delta.role:
            roles.append(choice.delta.role)
        text += choice.delta.content or ""
        if choice.logprobs and choice.logprobs.content:
            ids += ids_of(choice.logprobs.content)
            logprobs += [e.logprob for e in choice.logprobs.content]
        if choice.finish_reason:
            finish = choice.finish_reason
        if chunk.usage:
            usage = chunk.usage
    check(roles == ["assistant"], "the stream's roles: %s" % roles)
    print(json.dumps({"case": case["id"], "mode": "chat_stream", "text": text, "token_ids": ids, "logprobs": logprobs,
                      "finish_reason": finish, "prompt_tokens": usage.prompt_tokens,
                      "completion_tokens": usage.completion_tokens, "chunks": chunks}), flush=True)


def run_lorax_chat(url, case):
    params = {"apply_chat_template": True, "max_new_tokens": case["max_tokens"],
              "repetition_penalty": case["repetition_penalty"], "details": True}
    if case.get("model"):
        params["adapter_id"] = case["model"]
    r = requests.post(url + "/generate", json={"inputs": json.dumps(case["messages"]), "parameters": params}, timeout=120)
    check(r.status_code == 200, "LoRAX's chat form: %d %s" % (r.status_code, r.text))
    body = r.json()
    d = body["details"]
    print(json.dumps({"case": case["id"], "mode": "lorax_chat", "text": body["generated_text"],
                      "token_ids": [t["id"] for t in d["tokens"]], "logprobs": [t["logprob"] for t in d["tokens"]],
                      "finish_reason": d["finish_reason"], "prompt_tokens": d["prompt_tokens"],
                      "completion_tokens": d["generated_tokens"]}), flush=True)


def run_parity(url, cases_path):
    client = client_for(url)
    for case in json.load(open(cases_path)):
        run_chat(client, case)
        run_chat_stream(client, case)
        run_lorax_chat(url, case)


def status_of(call):
    try:
        call()
    except openai.APIStatusError as e:
        # The client hands over the body's "error" field (this server's is a string, as LoRAX's).
        body = e.body if isinstance(e.body, dict) else {"error": e.body}
        return {"status": e.status_code, "error": str(body.get("error")), "error_type": body.get("error_type")}
    fail("the request was answered 200")


def run_errors(url):
    client = client_for(url)
    user = {"role": "user", "content": "Hi"}
    out = {
        # The template's own raise_exception, before any stream starts.
        "refusal": status_of(lambda: client.chat.completions.create(
            model="", messages=[{"role": "developer", "content": "x"}], max_tokens=4)),
        "refusal_stream": status_of(lambda: list(client.chat.completions.create(
            model="", messages=[{"role": "developer", "content": "x"}], max_tokens=4, stream=True))),
        "no_messages": status_of(lambda: client.chat.completions.create(model="", messages=[], max_tokens=4)),
        "no_content": status_of(lambda: client.chat.completions.create(model="", messages=[{"role": "user"}],
                                                                        max_tokens=4)),
        "image_part": status_of(lambda: client.chat.completions.create(
            model="", max_tokens=4, messages=[{"role": "user", "content": [
                {"type": "image_url", "image_url": {"url": "http://x/y.png"}}]}])),
        "unknown_adapter": status_of(lambda: client.chat.completions.create(model="nope", messages=[user],
                                                                             max_tokens=4)),
        "top_logprobs": status_of(lambda: client.chat.completions.create(model="", messages=[user], max_tokens=4,
                                                                          logprobs=True, top_logprobs=21)),
        "unknown_field": status_of(lambda: client.chat.completions.create(model="", messages=[user], max_tokens=4,
                                                                           extra_body={"prompt": "x"})),
    }
    r = requests.post(url + "/generate", json={"inputs": "not json", "parameters": {"apply_chat_template": True}},
                      timeout=60)
    out["lorax_not_messages"] = {"status": r.status_code, **r.json()}
    # The server goes on serving.
    ok = client.chat.completions.create(model="", messages=[user], max_tokens=2, temperature=0)
    out["after"] = ok.choices[0].finish_reason
    print(json.dumps(out), flush=True)


def main():
    url, command = sys.argv[1], sys.argv[2]
    if command == "parity":
        run_parity(url, sys.argv[3])
    elif command == "errors":
        run_errors(url)
    elif command == "no-template":
        client = client_for(url)
        print(json.dumps(status_of(lambda: client.chat.completions.create(
            model="", messages=[{"role": "user", "content": "Hi"}], max_tokens=4))), flush=True)
    else:
        fail("unknown command " + command)


if __name__ == "__main__":
    if sys.argv[1:] == ["--version-check"]:
        print(json.dumps({"openai": openai.__version__}))
        sys.exit(0)
    main()
