"""An OpenAI-compatible stand-in for benchmarks (stdlib only): every POST is answered
after a fixed latency, at most CAP at once (the rest queue, as a provider's concurrency
limit would), with `429` + `Retry-After` for a share of the calls.

usage: llm_standin.py LATENCY_S CAP SHARE_429 RETRY_AFTER_S
Prints the port it listens on, then serves until killed; on SIGTERM prints
`requests=N refused=M` to stderr.
"""

import asyncio
import json
import random
import signal
import sys

LATENCY, CAP, SHARE_429, RETRY_AFTER = float(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
ANSWER = json.dumps({
    "id": "chatcmpl-bench", "object": "chat.completion", "model": "bench-model",
    "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "ok"}}],
    "usage": {"prompt_tokens": 10, "completion_tokens": 1},
}).encode()
REFUSAL = b'{"error": {"message": "Rate limit reached", "type": "rate_limit"}}'
stats = {"requests": 0, "refused": 0}
random.seed(22)


async def handle(reader, writer, slots):
    try:
        while True:
            if not await reader.readline():
                break
            length = 0
            while True:
                line = await reader.readline()
                if line in (b"\r\n", b"\n", b""):
                    break
                name, _, value = line.decode("latin-1").partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value.strip())
            if length:
                await reader.readexactly(length)
            async with slots:
                await asyncio.sleep(LATENCY)
            stats["requests"] += 1
            if random.random() < SHARE_429:
                stats["refused"] += 1
                head = f"HTTP/1.1 429 Too Many Requests\r\nretry-after: {RETRY_AFTER}\r\n"
                body = REFUSAL
            else:
                head, body = "HTTP/1.1 200 OK\r\n", ANSWER
            writer.write(f"{head}content-type: application/json\r\ncontent-length: {len(body)}\r\n\r\n".encode() + body)
            await writer.drain()
    except (ConnectionError, asyncio.IncompleteReadError):
        pass
    finally:
        writer.close()


async def main():
    slots = asyncio.Semaphore(CAP)
    server = await asyncio.start_server(lambda r, w: handle(r, w, slots), "127.0.0.1", 0, backlog=1024)
    print(server.sockets[0].getsockname()[1], flush=True)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    async with server:
        await stop.wait()
    print(f"requests={stats['requests']} refused={stats['refused']}", file=sys.stderr, flush=True)


asyncio.run(main())
