"""The minimal MCP client the benchmark compares evalgate with: one stdio session with
the server, then N `tools/call` of `echo`, at most CONCURRENCY at once, each checked.

usage: mcp_client.py N CONCURRENCY SERVER_ARGV...
"""

import asyncio
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

N, CONCURRENCY, ARGV = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]


async def main():
    server = StdioServerParameters(command=ARGV[0], args=ARGV[1:])
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await session.list_tools()
        slots = asyncio.Semaphore(CONCURRENCY)

        async def call(i):
            async with slots:
                result = await session.call_tool("echo", {"message": f"m{i}"})
                assert result.content[0].text == f"Echo: m{i}", result

        await asyncio.gather(*(call(i) for i in range(N)))


asyncio.run(main())
