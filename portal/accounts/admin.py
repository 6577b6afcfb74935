from django.contrib import admin

from portal.accounts.models import AccountEmail, UsernameKey


@admin.register(AccountEmail)
class AccountEmailAdmin(admin.ModelAdmin):
    """An administrator can confirm an address by hand (a user whose mail never arrives) or stop notifications."""

    list_display = ["user", "confirmed_at", "notify_verdicts"]
    list_filter = ["notify_verdicts"]
    search_fields = ["user__username", "user__email"]
    raw_id_fields = ["user"]


@admin.register(UsernameKey)
class UsernameKeyAdmin(admin.ModelAdmin):
    """Kept by a signal on every save of a user: shown, never edited here (an edited key would let two users read
    as one)."""

    list_display = ["user", "key"]
    search_fields = ["user__username", "key"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
