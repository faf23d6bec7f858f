"""models.list, models.default, and the check that a session's model is installed."""

import asyncio

from ctxkeep.daemon.backends.facts import same_model
from ctxkeep.daemon.backends.protocol import ModelCallError
from ctxkeep.daemon.config import ConfigError
from ctxkeep.daemon.config.file import set_top_level
from ctxkeep.daemon.handlers.registry import RequestError, handles
from ctxkeep.daemon.services import Services
from ctxkeep.protocol import ErrorCode, requests
from ctxkeep.protocol.replies import DefaultModelReply, ModelsReply


@handles(requests.ModelsList, waits=True)
async def models_list(services: Services, req: requests.ModelsList) -> ModelsReply:
    try:
        installed = await services.backend.installed()
    except ModelCallError as exc:
        raise RequestError(exc.code, exc.message) from None
    default = services.config.default_model
    for m in installed:
        m.default = same_model(m.name, default)
    down = [h for h in services.backend.hosts() if not h.reachable and h.checked]
    return ModelsReply(id=req.id, models=installed, default_model=default, down=down)


async def check_installed(services: Services, model: str) -> None:
    """Refuse a model Ollama does not have, naming the ones it has. When Ollama cannot be
    asked the model is taken as it is: the first turn then says what is wrong."""
    try:
        installed = [m.name for m in await services.backend.installed(details=False)]
    except ModelCallError:
        return
    if any(same_model(name, model) for name in installed):
        return
    have = ", ".join(installed) if installed else "none"
    raise RequestError(ErrorCode.MODEL_NOT_FOUND,
                       f"Ollama at {services.backend.host} has no model {model!r} (installed: "
                       f"{have}): pull it with `ollama pull {model}`, choose an installed one, "
                       "or pass --force to use it anyway")


@handles(requests.ModelsDefault, waits=True)
async def models_default(services: Services, req: requests.ModelsDefault) -> DefaultModelReply:
    """Record the default model in config.toml (off the loop) and use it from now on."""
    if not req.force:
        await check_installed(services, req.model)
    path = services.config_path
    try:
        await asyncio.to_thread(set_top_level, path, "default_model", req.model)
    except ConfigError as exc:
        raise RequestError(ErrorCode.INVALID_ARGUMENT,
                           f"{exc}; mend it (or move it away), then ask again") from None
    except OSError as exc:
        raise RequestError(ErrorCode.STORAGE_ERROR, f"cannot write {path}: {exc.strerror or exc}; "
                                                    "the default is unchanged") from None
    services.config.default_model = req.model
    return DefaultModelReply(id=req.id, model=req.model, config_path=str(path))
