"""``{% fixed %}...{% endfixed %}``: links and static files the same on every page (the site's header and footer),
written from memory once rendered (``web/form_memo.FixedNode``); the body sees none of the page's variables."""

from __future__ import annotations

from django import template

from leaderboard.web.form_memo import FixedNode

register = template.Library()


@register.tag
def fixed(parser: template.base.Parser, token: template.base.Token) -> template.Node:
    if len(token.split_contents()) != 1:
        raise template.TemplateSyntaxError("fixed takes no argument")
    nodelist = parser.parse(("endfixed",))
    parser.delete_first_token()
    return FixedNode(nodelist)
