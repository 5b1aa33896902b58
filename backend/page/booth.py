"""How the page is dressed: the script and style every page loads (the live strip), and booth mode.

Booth mode (RCHAT_KIOSK) hides the sidebar and its history list, skips the login form (app.py logs
the local user in, so chats are still stored), leaves out the settings panel and makes the text large.
Its idle reset and attract loop run in the browser (public/rchat.js), which is the only place that
sees typing and touches; it learns its options from data attributes on its own <script> tag.
"""

from __future__ import annotations

from html import escape

from backend.settings import Settings

SCRIPT = "/public/rchat.js"
STYLE = "/public/rchat.css"
ATTRACT_LINGER_SECONDS = 12  # how long a finished attract answer stays up before the page resets


def script_attributes(settings: Settings) -> str:
    """The <script> tag's attributes: `defer` (Chainlit's default) plus what rchat.js reads."""
    options = {
        "kiosk": settings.kiosk,
        "idle-seconds": settings.kiosk_idle_seconds,
        "attract": settings.kiosk and settings.kiosk_attract,
        "linger-seconds": ATTRACT_LINGER_SECONDS,
    }
    text = " ".join(f'data-{name}="{escape(str(value).lower(), quote=True)}"' for name, value in options.items())
    return f"defer {text}"


def dress_page(ui, settings: Settings) -> None:
    """Set Chainlit's UI config (chainlit.config.config.ui) once at start, before any page is served."""
    ui.custom_js = SCRIPT
    ui.custom_js_attributes = script_attributes(settings)
    ui.custom_css = STYLE
    if settings.kiosk:
        ui.default_sidebar_state = "hidden"  # Chainlit then draws no sidebar and no history list
        ui.confirm_new_chat = False  # the idle reset presses "New chat": no dialog in its way


def uses_password_login(settings: Settings, *, has_users: bool) -> bool:
    """A booth screen never asks for a password: its visitors chat as the local user."""
    return has_users and not settings.kiosk


def shows_settings_panel(settings: Settings) -> bool:
    """The booth's operator sets defaults in .env; visitors get no panel to change them."""
    return not settings.kiosk
