"""A change to what the model would see (a pin, the goal record), committed in one write
together with the estimate of the prompt it makes."""

from collections.abc import Callable

import msgspec

from ctxkeep.daemon.context.estimator import Estimator
from ctxkeep.daemon.store.context_records import ActiveContext
from ctxkeep.daemon.store.records import SessionRecord, View
from ctxkeep.daemon.store.store import ContextChanged, Store

#: Reads before giving up when a turn keeps changing the active messages meanwhile.
ATTEMPTS = 5


async def change_prompt(store: Store, estimator: Estimator, session_id: str,
                        change: Callable[[ActiveContext], None]) -> View:
    """Read the session once, apply `change` to its context state, estimate the prompt
    that results, and commit both in one transaction. Should a turn change the active
    messages in between, read again (the estimate must be of the prompt committed).
    Returns the session as it now is."""
    for attempt in range(ATTEMPTS):
        view = store.history.view(session_id)
        changed = msgspec.structs.replace(view.context)
        change(changed)
        estimate = estimator.context_estimate(view.session, changed, view.active)

        def commit(context: ActiveContext, session: SessionRecord) -> None:
            change(context)
            session.count = session.count.estimated(estimate.tokens, exact=estimate.uncertain == 0)  # the prompt last counted keeps it
        try:
            session, context, _ = await store.off_loop(store.context.update, session_id, commit,
                                                       expected=view.context.seqs)
        except ContextChanged:
            if attempt == ATTEMPTS - 1:
                raise
            continue
        return View(session, context, view.active)
    raise AssertionError("unreachable")
