"""The client of the background guide, as a user would run it: create, then poll with a new
client until the Response is terminal, then print status and output_text.

The base URL comes from OPENAI_BASE_URL (the SDK's own variable), as a user pointing the
guide's code at their server would set it.
"""

import asyncio

from openai import AsyncOpenAI


async def main() -> None:
    async with AsyncOpenAI(api_key="gateway-key") as client:
        accepted = await client.responses.create(
            model="background-mock",
            input="Summarize the migration risks and next actions.",
            background=True,
            store=True,
            metadata={"lgos_settings": '{"delay_seconds": 1}'},
        )
        print("accepted", accepted.id, accepted.status)

    async with AsyncOpenAI(api_key="gateway-key") as client:
        while True:
            response = await client.responses.retrieve(accepted.id)
            if response.status not in {"queued", "in_progress"}:
                break
            await asyncio.sleep(1)

        print(response.status, response.output_text)


asyncio.run(main())
